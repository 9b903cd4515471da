/** `host/db/kv`: the key-value store interface and its backends (classic-level, PostgreSQL). */
export { ClassicKv } from "./classic-kv.js";
export {
  collect,
  type KvIterateOptions,
  type KvIterator,
  type KvOperation,
  type KvRange,
  type KvSnapshot,
  type KvStore,
  NO_KEY,
} from "./kv.js";
export { PostgresKv } from "./postgres-kv.js";
