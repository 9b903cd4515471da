import type { NamedLocks } from "./write-lock.js";

/**
 * Runs `work` holding every lock of `sorted` in this process, taken together at a moment when all
 * are free; between tries it waits (`waitFor`) for the first busy one to be let go. After `rounds`
 * tries it runs `unlocked` instead, holding none. `signal` ends the wait between tries.
 */
export async function holdingAllAtOnce<T>(
  locks: NamedLocks,
  sorted: string[],
  waitFor: (name: string) => Promise<unknown>,
  work: () => Promise<T>,
  unlocked: () => Promise<T>,
  rounds: number,
  signal?: AbortSignal,
): Promise<T> {
  for (let round = 0; round < rounds; round++) {
    signal?.throwIfAborted();
    const release = locks.tryHoldAll(sorted);
    if (release) {
      try {
        return await work();
      } finally {
        release();
      }
    }
    await waitFor(locks.busyOf(sorted) as string);
  }
  signal?.throwIfAborted();
  return unlocked();
}
