/** `host/live`: live queries (subscriptions re-run by read-set / write-set intersection). */
export type { QueryFailure, Subscriber } from "./group.js";
export { type LiveObserver, LiveQueries } from "./live-queries.js";
