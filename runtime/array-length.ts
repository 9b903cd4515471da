/** How far a generic array method may walk, and the length it walks, read once (array-bounds.ts). */

/**
 * The most elements a generic array method may walk. A dense array of 8 Mi numbers takes 64 MiB of
 * the isolate's 128 MiB heap, so a real array seldom comes near; past it, the walk is over a sparse
 * array's holes or an array-like's `length`, where each step costs a C++ lookup (0.3 s for 8 Mi on
 * an idle core, the slowest measured).
 */
export const MAX_WALKED_ELEMENTS = 2 ** 23;

/**
 * The most elements an array's `sort` or `toSorted` may sort: before calling any comparison, V8
 * copies the elements in C++, about 0.1 µs each (2e6 held the thread 0.2-0.3 s past a stop;
 * 8e6 held it 1.6 s and filled the heap).
 */
export const MAX_SORTED_ELEMENTS = 2 ** 21;

// Captured: a `Math.min` or `Number` capsule code replaced answered an object that was 0 to the
// bound's look and 2 ** 40 to the built-in's (found by review).
const toNumber = Number;
const { floor, min } = Math;
const MAX_SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

/** `value.length` as the array methods read it (ToLength), read once. */
export function lengthOf(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const length = toNumber((value as { length?: unknown }).length);
  if (!(length > 0)) return 0;
  return min(floor(length), MAX_SAFE_INTEGER);
}

/** The refusal of a walk over `length` elements by `method` of `Array.prototype`. */
export function tooLong(method: string, length: number, most = MAX_WALKED_ELEMENTS): RangeError {
  return walkRefused(`Array.prototype.${method}`, length, most);
}

/** The refusal of a walk over `length` elements by built-in `qualified`, which may walk `most`. */
export function walkRefused(qualified: string, length: number, most = MAX_WALKED_ELEMENTS): RangeError {
  return new RangeError(
    `${qualified} on ${length} elements: capsules may walk at most ${most} (a sparse array or an array-like object this long is refused; use a Map or an object keyed by index).`,
  );
}
