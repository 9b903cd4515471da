/**
 * `concat`, `flat` and `flatMap` in JavaScript, as the specification writes them: the built-ins
 * read an object's spreading flag and length again after any bound's look, and walk nested arrays'
 * holes, in C++ where V8 cannot stop them (array-bounds.ts decides when these run).
 */

import { lengthOf, MAX_WALKED_ELEMENTS, tooLong } from "./array-length.js";
import { apply, type Method, replaceBuiltin as replace, stopPoint } from "./builtin-wrap.js";

const construct = Reflect.construct;
const isArray = Array.isArray;
const defineProperty = Object.defineProperty;
const isConcatSpreadable = Symbol.isConcatSpreadable;
// Captured: `Object`, `Number` and `Math` capsule code replaced must not answer for these walks.
const toObject = Object;
const toNumber = Number;
const { max, min, trunc } = Math;

/** CreateDataPropertyOrThrow. */
function createDataProperty(target: object, key: number, value: unknown): void {
  defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Whether `value` can be constructed (`new value()` would not throw for want of [[Construct]]). */
function isConstructor(value: unknown): boolean {
  if (typeof value !== "function") return false;
  try {
    construct(String, [], value);
    return true;
  } catch {
    return false;
  }
}

/** ArraySpeciesCreate(`original`, 0): what `concat` and `flat` build their result with. */
function arraySpeciesCreate(original: object): object {
  if (!isArray(original)) return [];
  let species = (original as { constructor?: unknown }).constructor;
  if (species !== null && (typeof species === "object" || typeof species === "function")) {
    species = (species as { [Symbol.species]?: unknown })[Symbol.species];
    if (species === null) species = undefined;
  }
  if (species === undefined) return [];
  if (!isConstructor(species)) throw new TypeError("object.constructor[Symbol.species] is not a constructor");
  return construct(species as new (length: number) => object, [0]);
}

/** IsConcatSpreadable, reading the flag once. */
function spreadable(value: unknown): boolean {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return false;
  const flag = (value as { [isConcatSpreadable]?: unknown })[isConcatSpreadable];
  return flag !== undefined ? Boolean(flag) : isArray(value);
}

/**
 * `concat` in JavaScript, for receivers and arguments that are not all plain arrays or primitives:
 * the built-in reads an object's spreading flag and `length` again after any look of ours.
 */
export function concatWalking(receiver: unknown, items: unknown[]): unknown {
  if (receiver === null || receiver === undefined)
    throw new TypeError("Array.prototype.concat called on null or undefined");
  const object = toObject(receiver) as object;
  const result = arraySpeciesCreate(object);
  let n = 0;
  // An index loop: an iterator capsule code replaced must not choose the items.
  for (let i = -1; i < items.length; i++) {
    const item = i < 0 ? object : items[i];
    if (spreadable(item)) {
      const source = item as Record<number, unknown>;
      const length = lengthOf(source);
      if (n + length > MAX_WALKED_ELEMENTS) throw tooLong("concat", n + length);
      for (let k = 0; k < length; k++, n++) if (k in source) createDataProperty(result, n, source[k]);
    } else {
      if (n + 1 > MAX_WALKED_ELEMENTS) throw tooLong("concat", n + 1);
      createDataProperty(result, n, item);
      n++;
    }
  }
  (result as { length: number }).length = n;
  return result;
}

/** FlattenIntoArray, in JavaScript: the built-in walks nested arrays' holes where V8 cannot stop it. */
function flattenInto(
  target: object,
  source: Record<number, unknown>,
  sourceLength: number,
  start: number,
  depth: number,
  mapper?: Method,
  thisArg?: unknown,
): number {
  let at = start;
  for (let index = 0; index < sourceLength; index++) {
    if (!(index in source)) continue;
    let element = source[index];
    if (mapper) element = apply(mapper, thisArg, [element, index, source]);
    if (depth > 0 && isArray(element)) {
      const length = lengthOf(element);
      if (at + length > MAX_WALKED_ELEMENTS) throw tooLong(mapper ? "flatMap" : "flat", at + length);
      at = flattenInto(target, element as Record<number, unknown>, length, at, depth - 1);
    } else {
      if (at + 1 > MAX_WALKED_ELEMENTS) throw tooLong(mapper ? "flatMap" : "flat", at + 1);
      createDataProperty(target, at, element);
      at++;
    }
  }
  return at;
}

/** `flat` and `flatMap` in JavaScript (see {@link flattenInto}). */
export function flatWalking(): void {
  const objectOf = (receiver: unknown, name: string): object => {
    if (receiver === null || receiver === undefined)
      throw new TypeError(`Array.prototype.${name} called on null or undefined`);
    return toObject(receiver) as object;
  };
  replace(
    Array.prototype,
    "flat",
    () =>
      ({
        m(this: unknown, depth?: unknown) {
          const object = objectOf(this, "flat");
          const length = lengthOf(object);
          if (length > MAX_WALKED_ELEMENTS) throw tooLong("flat", length);
          let levels = 1;
          if (depth !== undefined) {
            const number = toNumber(depth);
            // biome-ignore lint/suspicious/noSelfCompare: NaN, without a Number.isNaN capsule code may replace
            levels = number !== number ? 0 : max(0, trunc(number));
          }
          const result = arraySpeciesCreate(object);
          flattenInto(result, object as Record<number, unknown>, length, 0, levels);
          return result;
        },
      }).m,
  );
  replace(
    Array.prototype,
    "flatMap",
    () =>
      ({
        m(this: unknown, mapper?: unknown, thisArg?: unknown) {
          const object = objectOf(this, "flatMap");
          const length = lengthOf(object);
          if (typeof mapper !== "function") throw new TypeError("flatMap mapper function is not callable");
          if (length > MAX_WALKED_ELEMENTS) throw tooLong("flatMap", length);
          const result = arraySpeciesCreate(object);
          flattenInto(result, object as Record<number, unknown>, length, 0, 1, mapper as Method, thisArg);
          return result;
        },
      }).m,
  );
}

/** Search strings longer than this make `includes`, `indexOf` and `lastIndexOf` walk in JavaScript. */
export const MAX_NATIVE_SEARCHED_CHARS = 2 ** 14;

/** ToIntegerOrInfinity. */
function integerOf(value: unknown): number {
  const number = +(value as number);
  // biome-ignore lint/suspicious/noSelfCompare: NaN, without a Number.isNaN capsule code may replace
  return number !== number ? 0 : trunc(number);
}

/**
 * `includes`, `indexOf` or `lastIndexOf` of a long string in a plain array, in JavaScript: past
 * 16,383 characters V8 compares such strings in full, one after another in C++ (a thousand of
 * 16 Mi characters held the thread 1.4 s; found by review). `args` as the method got them.
 */
export function searchInJavaScript(name: string, array: unknown[], args: ArrayLike<unknown>): unknown {
  const search = args[0];
  const length = array.length;
  if (name === "lastIndexOf") {
    const from = args.length > 1 ? integerOf(args[1]) : length - 1;
    for (let k = from >= 0 ? min(from, length - 1) : length + from; k >= 0; k--) {
      stopPoint();
      if (k in array && array[k] === search) return k;
    }
    return -1;
  }
  const from = integerOf(args[1]);
  for (let k = from >= 0 ? from : max(length + from, 0); k < length; k++) {
    stopPoint();
    if ((name === "includes" || k in array) && array[k] === search) return name === "includes" ? true : k;
  }
  return name === "includes" ? false : -1;
}
