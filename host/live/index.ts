/** `host/live`: live queries (subscriptions re-run by read-set / write-set intersection). */
export { type LiveObserver, LiveQueries, type Subscriber } from "./live-queries.js";
