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
 * checks in its transaction (opaque to callers, who only pass it on).
 */
export interface LockFence {
  readonly guard: string;
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
