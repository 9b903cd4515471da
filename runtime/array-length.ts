/** How far a generic array method may walk, and the length it walks, read once (array-bounds.ts). */

/**
 * The most elements a generic array method may walk. A dense array of 8 Mi numbers takes 64 MiB of
 * the isolate's 128 MiB heap, so a real array seldom comes near; past it, the walk is over a sparse
 * array's holes or an array-like's `length`, where each step costs a C++ lookup (0.3 s for 8 Mi on
 * an idle core, the slowest measured).
 */
export const MAX_WALKED_ELEMENTS = 2 ** 23;

/** `value.length` as the array methods read it (ToLength), read once. */
export function lengthOf(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const length = Number((value as { length?: unknown }).length);
  if (!(length > 0)) return 0;
  return Math.min(Math.floor(length), Number.MAX_SAFE_INTEGER);
}

/** The refusal of a walk over `length` elements by `method`. */
export function tooLong(method: string, length: number): RangeError {
  return new RangeError(
    `Array.prototype.${method} on ${length} elements: capsules may walk at most ${MAX_WALKED_ELEMENTS} (a sparse array or an array-like object this long is refused; use a Map or an object keyed by index).`,
  );
}
