/**
 * `host/db/kv`: the key-value store interface (storage plus a host bus), the base class backends
 * extend, and the backends (classic-level, PostgreSQL).
 */
export { ClassicKv } from "./classic-kv.js";
export {
  collect,
  type HostBus,
  hasKeyUnder,
  type IfFree,
  type KeptScan,
  type KvIterateOptions,
  type KvIterator,
  type KvOperation,
  type KvRange,
  type KvSnapshot,
  type KvStore,
  type KvSupports,
  type LockOptions,
  NO_KEY,
  NOTHING_SENT,
} from "./kv.js";
export {
  bothFences,
  type FencedWork,
  LOCK_LOST,
  type LockFence,
  lockLostError,
  refusedForLostLock,
} from "./lock-fence.js";
export { PostgresKv } from "./postgres-kv.js";
export { KvStoreBase } from "./store.js";
