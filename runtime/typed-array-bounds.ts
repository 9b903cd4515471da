/**
 * Typed arrays' built-ins that walk in C++ where V8 cannot stop them (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them): a typed array made from an array-like
 * (`new Uint8Array({ length: 1e8 })` 4.5 s; `from` and `set` alike), `toLocaleString` (one
 * 1.5e7-element array 6 s), and long sorts.
 */

import { MAX_WALKED_ELEMENTS } from "./array-length.js";
import { copyArrayLike, iterableOrCopy } from "./array-likes.js";
import { apply, type Method, replaceBuiltin as replace, replaceConstructor } from "./builtin-wrap.js";
import { boundedLocales } from "./locale-bounds.js";
import { isPlainArray } from "./plain-arrays.js";

const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
const TypedArray = Object.getPrototypeOf(Uint8Array) as object;
/** The real length, not one a subclass or an own property reports (found by the fixes' review). */
const lengthOfTyped = getOwnPropertyDescriptor(typedArrayPrototype, "length")?.get as Method;
const tagOfTyped = getOwnPropertyDescriptor(typedArrayPrototype, Symbol.toStringTag)?.get as Method;
const byteLengthOfBuffer = getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")?.get as Method;

const TYPED_ARRAYS = [
  "Int8Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "Int16Array",
  "Uint16Array",
  "Int32Array",
  "Uint32Array",
  "Float32Array",
  "Float64Array",
  "BigInt64Array",
  "BigUint64Array",
] as const;

/** Typed arrays longer than this sort through a JavaScript comparison, which V8 can stop. */
export const MAX_NATIVE_SORT_ELEMENTS = 2 ** 21;

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

/** Whether `value` is a typed array (a check that runs no capsule code and never throws). */
function isTypedArray(value: unknown): boolean {
  return apply(tagOfTyped, value, []) !== undefined;
}

function isArrayBuffer(value: unknown): boolean {
  try {
    apply(byteLengthOfBuffer, value, []);
    return true;
  } catch {
    return false;
  }
}

/** What a typed array's constructor or `from` may take from `source`: see {@link iterableOrCopy}. */
function typedSource(source: unknown, qualified: string): unknown {
  return isTypedArray(source) ? source : iterableOrCopy(source, qualified);
}

/**
 * What `set` may take from `source`, which it walks as an array-like (never as an iterable): a
 * typed array or a plain array within the bound as they are, anything else copied. A string
 * counts too: `set` walks its characters.
 */
function setSource(source: unknown): unknown {
  if (source === null || source === undefined || isTypedArray(source)) return source;
  if (isPlainArray(source) && source.length <= MAX_WALKED_ELEMENTS) return source;
  return copyArrayLike(Object(source) as object, "TypedArray.prototype.set");
}

function boundConstructorsAndFrom(): void {
  for (const name of TYPED_ARRAYS)
    replaceConstructor(globalThis, name, (args) => {
      const first = args[0];
      // A buffer, a length or another typed array go on as they are.
      if (args.length > 0 && first !== null && (typeof first === "object" || typeof first === "function"))
        if (!isArrayBuffer(first)) args[0] = typedSource(first, name);
      return args;
    });
  replace(
    TypedArray,
    "from",
    (original) =>
      ({
        m(this: unknown, source: unknown, map?: unknown, thisArgument?: unknown) {
          return apply(original, this, [typedSource(source, "TypedArray.from"), map, thisArgument]);
        },
      }).m,
  );
  replace(
    typedArrayPrototype,
    "set",
    (original) =>
      ({
        m(this: unknown, source: unknown, offset?: unknown) {
          return apply(original, this, [setSource(source), offset]);
        },
      }).m,
  );
}

/**
 * `toLocaleString` in JavaScript, as the specification writes it: the built-in calls each
 * element's `toLocaleString` from C++, without a step where V8 can stop it.
 */
function toLocaleStringInJavaScript(): void {
  replace(
    typedArrayPrototype,
    "toLocaleString",
    () =>
      ({
        m(this: unknown, locales?: unknown, options?: unknown) {
          const length = apply(lengthOfTyped, this, []) as number;
          const list = boundedLocales(locales);
          let text = "";
          for (let i = 0; i < length; i++) {
            if (i > 0) text += ",";
            const element = (this as Record<number, { toLocaleString(...args: unknown[]): unknown }>)[i];
            if (element !== undefined && element !== null) text += `${element.toLocaleString(list, options)}`;
          }
          return text;
        },
      }).m,
  );
}

/** Sorts long typed arrays without a comparator through {@link numericOrder}. */
function boundSorts(): void {
  for (const name of ["sort", "toSorted"])
    replace(
      typedArrayPrototype,
      name,
      (original) =>
        ({
          m(this: unknown, compare?: unknown) {
            const long =
              compare === undefined && (apply(lengthOfTyped, this, []) as number) > MAX_NATIVE_SORT_ELEMENTS;
            return apply(original, this, [long ? numericOrder : compare]);
          },
        }).m,
    );
}

export function boundTypedArrays(): void {
  boundConstructorsAndFrom();
  toLocaleStringInJavaScript();
  boundSorts();
}
