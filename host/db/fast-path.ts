/**
 * The one synchronous path through the database. An inline handler's point read or point write is
 * answered inside the same entry into its isolate when the store can answer at once (classic-level
 * reads its snapshot synchronously, and a write only touches the transaction's in-memory overlay);
 * `Transaction.tryGetSync` and its siblings try that and return {@link NOT_READY} otherwise, and
 * the caller falls back to the plain asynchronous method.
 */

/** A fast-path answer that needs I/O: call the asynchronous method instead. */
export const NOT_READY: unique symbol = Symbol("not ready");

/** The type of {@link NOT_READY}. */
export type NotReady = typeof NOT_READY;

/** True when `value` (a platform call's answer) still has to be awaited. */
export function isPending<T>(value: T | Promise<T>): value is Promise<T> {
  return value instanceof Promise;
}

/**
 * `then` for a value that may still be a promise: synchronous when it is not, so a path through the
 * database stays synchronous as far as its store answers at once.
 */
export function after<T, U>(value: T | Promise<T>, next: (value: T) => U | Promise<U>): U | Promise<U> {
  return isPending(value) ? value.then(next) : next(value);
}
