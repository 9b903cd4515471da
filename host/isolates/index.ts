/** `host/isolates`: one isolate per deployment, limits, watchdog, LRU, the host end of the bridge. */
export {
  CapsuleIsolate,
  DEFAULT_ISOLATE_LIMITS,
  type IsolateLimits,
  type MeteredResponse,
  type SyscallHandler,
} from "./capsule-isolate.js";
export { type ArtifactLoader, DeploymentRunner } from "./deployment-runner.js";
export {
  DEFAULT_INLINE_POLICY,
  InlineAbandoned,
  type InlinePolicy,
  retryAbandoned,
} from "./inline-policy.js";
export { DEFAULT_POOL_OPTIONS, IsolatePool, type PoolOptions } from "./isolate-pool.js";
export { type HandlerLogEntry, transactionSyscalls } from "./syscalls.js";
