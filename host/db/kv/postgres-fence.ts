/**
 * Fencing on PostgreSQL (see lock-fence.ts). A lock's connection, with the lock, takes a second
 * advisory lock on a random key of its own (the holding), which only it ever takes exclusively:
 * while the holding is held, the lock is. A fenced write first takes the lock's write barrier
 * shared, then fails unless the holding is still held (a shared try of it must fail); whoever
 * takes the lock next passes through the barrier exclusively before reading, so it waits for a
 * write that found the holding held and sees what it wrote. One window is left: a backend that
 * ends lets go of its locks one partition of the lock table at a time, so for microseconds the
 * lock may be free (and taken) while the holding is still held. Closing it would mean asking
 * `pg_locks` on every write, which holds every partition of the lock table while it copies it.
 */
import { randomBytes } from "node:crypto";
import { type LockFence, lockLostError } from "./lock-fence.js";

/** PostgreSQL's error code for a division by zero: the fence's guard failing. */
const DIVISION_BY_ZERO = "22012";

/** A lock's keys: its holding's (random, this taking's only) and its write barrier's. */
export interface FenceKeys {
  holding: bigint;
  barrier: bigint;
}

/** New keys for a taking of a lock whose write barrier is advisory lock `barrier`. */
export function fenceKeys(barrier: bigint): FenceKeys {
  return { holding: randomBytes(8).readBigInt64BE(0), barrier };
}

/**
 * The statement that takes advisory lock `lock` in its transaction, then its holding, then waits
 * for the fenced writes of the holder before it, taking the barrier and letting go of it at once.
 * One statement: each costs a parse and a plan on every taking, and on a mutation's path. CASE
 * evaluates its condition before its result, which orders the steps (a void result is not null).
 */
export function takingStatement(lock: bigint, keys: FenceKeys): string {
  const then = (step: string, next: string) => `CASE WHEN ${step} IS NOT NULL THEN ${next} END`;
  return `SELECT ${then(
    `pg_advisory_xact_lock(${lock}::bigint)`,
    then(
      `pg_advisory_xact_lock(${keys.holding}::bigint)`,
      then(`pg_advisory_lock(${keys.barrier}::bigint)`, `pg_advisory_unlock(${keys.barrier}::bigint)`),
    ),
  )}`;
}

/**
 * The fence writes under the lock pass on: one guard, an expression evaluated in their
 * transaction (in their write statement: one more statement cost a sequential mutation several
 * percent), that takes the barrier shared, then (CASE's order) divides by zero unless another
 * session (the lock's) still holds the holding. The failure is computed at run time: a constant
 * one would fail as the statement is planned.
 */
export function fenceOf(keys: FenceKeys): LockFence {
  return {
    guards: [
      `1 / (CASE WHEN pg_advisory_xact_lock_shared(${keys.barrier}::bigint) IS NOT NULL THEN (NOT pg_try_advisory_xact_lock_shared(${keys.holding}::bigint))::int END)`,
    ],
  };
}

/** `error` as a fenced write's failure: {@link lockLostError} when the guard refused it. */
export function fencedFailure(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code === DIVISION_BY_ZERO ? lockLostError() : error;
}
