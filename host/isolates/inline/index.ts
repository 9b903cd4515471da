/**
 * `host/isolates/inline`: running handlers on the host's main thread. The transport
 * (transport.ts) with its per-turn entry queue (turn-queue.ts) and what it needs of its isolate
 * (inline-host.ts), the policy that decides when a deployment may run inline (policy.ts), the
 * sentinel that bounds each entry (sentinel.ts) and what a failed entry calls for
 * (entry-failure.ts), the watchdog for a parked main thread (watchdog.ts), the execution table
 * (slot-table.ts), and the retry of runs abandoned when a deployment is demoted (abandoned.ts).
 */
export { InlineAbandoned, retryAbandoned } from "./abandoned.js";
export type { InlineHost } from "./inline-host.js";
export { DEFAULT_INLINE_POLICY, type InlinePolicy, InlineStanding } from "./policy.js";
export { InlineSentinel } from "./sentinel.js";
export { SlotTable } from "./slot-table.js";
export { InlineTransport } from "./transport.js";
