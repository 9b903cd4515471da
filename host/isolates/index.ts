/**
 * `host/isolates`: one isolate per deployment (capsule-isolate.ts) with its limits and CPU meter,
 * the two transports into it (threaded-transport.ts, inline/), the runners and pool that keep
 * isolates per deployment, the fair scheduler of the host's execution slots (scheduler.ts) with
 * the pause of deployments stopped again and again (breach-pause.ts), and the host end of the
 * syscall bridge (syscalls.ts).
 */
export { CapsuleIsolate } from "./capsule-isolate.js";
export {
  DEFAULT_INLINE_POLICY,
  type InlinePolicy,
  InlineStanding,
  retryAbandoned,
} from "./inline/index.js";
export { type ArtifactLoader, IsolateKeeper } from "./isolate-keeper.js";
export { IsolatePool } from "./isolate-pool.js";
export type { KnownDeployments } from "./known-deployments.js";
export { DEFAULT_ISOLATE_LIMITS, type IsolateLimits } from "./limits.js";
export { IGNORE_ISOLATES, type IsolateObserver } from "./observer.js";
export { DEFAULT_POOL_OPTIONS, type PoolOptions } from "./pool-options.js";
export { type HandlerLogEntry, transactionSyscalls } from "./syscalls.js";
export type { MeteredResponse, SyscallHandler } from "./transport.js";
