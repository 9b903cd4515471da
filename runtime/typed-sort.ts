/**
 * Long typed-array sorts in pieces V8 can stop between. The built-in sort runs in C++: without a
 * comparison, a long one holds the thread; with one, it first copies every element into boxed
 * numbers (3e6 doubles held the thread 0.64 s, 8e6 filled the heap). Here short runs are sorted by
 * the built-in and merged in JavaScript (docs/security.md, "Isolates"; typed-array-bounds.ts
 * decides when).
 */
import { apply, type Method, stopPoint } from "./builtin-wrap.js";
import { inJavaScript } from "./callback-bounds.js";
import {
  realConstructorOf,
  type Typed,
  typedArrayPrototype,
  typedGetter,
  typedLength,
} from "./typed-arrays.js";

/** Runs sorted by the built-in without a comparison: about 0.2 s of C++ at most. */
export const MAX_NATIVE_SORT_ELEMENTS = 2 ** 21;
/** Runs sorted by the built-in with a comparison (its boxed copy stays small). */
const COMPARED_RUN = 2 ** 12;

const bufferOfTyped = typedGetter("buffer");
const byteOffsetOfTyped = typedGetter("byteOffset");
const nativeSort = typedArrayPrototype.sort as Method;
const nativeSet = typedArrayPrototype.set as Method;
const { min } = Math;

/**
 * The order a typed array's own sort gives (numbers ascending, -0 before +0, NaN last), as a
 * comparison V8 calls, and so can stop between calls.
 */
export function numericOrder(a: number | bigint, b: number | bigint): number {
  // biome-ignore lint/suspicious/noSelfCompare: NaN, without a Number.isNaN capsule code may replace
  const aNaN = a !== a;
  // biome-ignore lint/suspicious/noSelfCompare: as above
  const bNaN = b !== b;
  if (aNaN) return bNaN ? 0 : 1;
  if (bNaN) return -1;
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === 0 && b === 0) {
    const aNegative = 1 / (a as number) < 0;
    const bNegative = 1 / (b as number) < 0;
    return aNegative === bNegative ? 0 : aNegative ? -1 : 1;
  }
  return 0;
}

/** Whether `sort(compare)` on `length` elements runs in runs and merges (see {@link sortInRuns}). */
export function sortsInRuns(length: number, compare: unknown): boolean {
  return length > (compare === undefined ? MAX_NATIVE_SORT_ELEMENTS : COMPARED_RUN);
}

/**
 * Sorts typed array `typed` in place as its own `sort(compare)` would: runs sorted by the
 * built-in, then merged in JavaScript, stable, through a scratch array of the same kind.
 */
export function sortInRuns(typed: object, compare: unknown): object {
  if (compare !== undefined && typeof compare !== "function")
    throw new TypeError("The comparison function must be either a function or undefined");
  const length = typedLength(typed);
  const Real = realConstructorOf(typed);
  const buffer = apply(bufferOfTyped, typed, []);
  const byteOffset = apply(byteOffsetOfTyped, typed, []) as number;
  const run = compare === undefined ? MAX_NATIVE_SORT_ELEMENTS : COMPARED_RUN;
  const runArguments = compare === undefined ? [] : [inJavaScript(compare)];
  for (let start = 0; start < length; start += run) {
    stopPoint();
    const view = new Real(buffer, byteOffset + start * Real.BYTES_PER_ELEMENT, min(run, length - start));
    apply(nativeSort, view, runArguments);
  }
  const order =
    compare === undefined
      ? numericOrder
      : (a: unknown, b: unknown) => {
          const result = +(apply(compare as Method, undefined, [a, b]) as number);
          // biome-ignore lint/suspicious/noSelfCompare: NaN counts as 0, as in the built-in
          return result !== result ? 0 : result;
        };
  let source = typed as Typed;
  let target = new Real(length);
  for (let width = run; width < length; width *= 2) {
    for (let low = 0; low < length; low += 2 * width) {
      stopPoint();
      const middle = min(low + width, length);
      const high = min(low + 2 * width, length);
      let i = low;
      let j = middle;
      let k = low;
      while (i < middle && j < high)
        target[k++] =
          order(source[i] as number, source[j] as number) > 0
            ? (source[j++] as number)
            : (source[i++] as number);
      while (i < middle) target[k++] = source[i++] as number;
      while (j < high) target[k++] = source[j++] as number;
    }
    const merged = target;
    target = source;
    source = merged;
  }
  if (source !== typed) apply(nativeSet, typed, [source]);
  return typed;
}
