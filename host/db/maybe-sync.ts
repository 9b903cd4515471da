/**
 * Values that are often ready at once and only sometimes need I/O. A point read on classic-level
 * is answered synchronously from its snapshot, while the PostgreSQL store answers with a promise;
 * keeping the ready case synchronous lets an inline handler's platform call be answered inside the
 * same entry into its isolate (see host/isolates), instead of a second entry after a promise hop.
 */
export type MaybePromise<T> = T | Promise<T>;

/** True when `value` still has to be awaited. */
export function isPending<T>(value: MaybePromise<T>): value is Promise<T> {
  return value instanceof Promise;
}

/** Runs `next` on `value` now when it is ready, else when it settles. */
export function andThen<T, U>(value: MaybePromise<T>, next: (ready: T) => MaybePromise<U>): MaybePromise<U> {
  return isPending(value) ? value.then(next) : next(value);
}

/**
 * Runs `work`, turning a synchronous throw into a rejected promise, so callers that `.catch()` or
 * `await` see failures the same way whether the work finished synchronously or not.
 */
export function attempt<T>(work: () => MaybePromise<T>): MaybePromise<T> {
  try {
    return work();
  } catch (error) {
    return Promise.reject(error);
  }
}
