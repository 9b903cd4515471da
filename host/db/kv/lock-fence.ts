/**
 * Fencing of writes made under a cross-process lock. A lock held by a database connection ends
 * with that connection: should it be lost while its holder works (a server that ended the backend,
 * a network that dropped only that socket), another host may take the lock and write, and the
 * first holder's later write would land over it (a lost update). A holder passes the lock's fence
 * with its writes; the backend lands a write only while the lock is still held, and makes a later
 * holder's taking wait for a fenced write already on its way.
 */
import { isPlatformError, PlatformError } from "../../../sdk/values/index.js";

/**
 * A lock's fence, as its backend made it when the lock was taken: what a write under the lock
 * checks in its transaction, each guard failing the write unless its lock is still held (opaque to
 * callers, who only pass it on, or join two: {@link bothFences}).
 */
export interface LockFence {
  readonly guards: readonly string[];
}

/** Work run under a lock, given the lock's fence for its writes (none where the store's locks have none). */
export type FencedWork<T> = (fence?: LockFence) => Promise<T>;

/**
 * The fence of a write made under two locks, which lands only while both are held: a deploy's
 * switch, prepared under the deployment's lifecycle lock (its previous record read under it) and
 * written under its write lock. Either may be absent (a store whose locks have no fences). A write
 * checks its guards in order, each waiting for its lock's barrier: every caller joins them in one
 * order (a deployment's write lock, its lifecycle lock, storage quota locks), so that no two
 * writes wait for each other's barriers.
 */
export function bothFences(
  first: LockFence | undefined,
  second: LockFence | undefined,
): LockFence | undefined {
  if (!first || !second) return first ?? second;
  return { guards: [...first.guards, ...second.guards] };
}

/** The `cause` of a write refused because its lock had been lost: nothing was written. */
export const LOCK_LOST: Error = Object.freeze(
  new Error("The lock the write was made under was lost before it landed: nothing was written."),
);

/** The failure of a write refused by its fence (see {@link LOCK_LOST}). */
export function lockLostError(): PlatformError {
  return new PlatformError(
    "unavailable",
    "The database connection holding the lock this write was made under was lost before the write landed; nothing was written. Retry.",
    { cause: LOCK_LOST, retryAfterSeconds: 1 },
  );
}

/** Whether `error` is a write refused by its fence: it wrote nothing, for certain ({@link LOCK_LOST}). */
export function refusedForLostLock(error: unknown): boolean {
  return isPlatformError(error) && error.cause === LOCK_LOST;
}
