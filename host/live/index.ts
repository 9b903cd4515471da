/** `host/live`: live queries (subscriptions re-run by read-set / write-set intersection). */
export type { QueryFailure, Subscriber } from "./group.js";
export { LiveQueries } from "./live-queries.js";
export type { LiveObserver } from "./outcome-delivery.js";
