/**
 * Typed arrays' built-ins that walk in C++ where V8 cannot stop them (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them): a typed array made from an array-like
 * (`new Uint8Array({ length: 1e8 })` 4.5 s; `from` and `set` alike), `toLocaleString` (one
 * 1.5e7-element array 6 s), long sorts (typed-sort.ts), and long walks calling a built-in as
 * their callback (callback-bounds.ts).
 */

import { MAX_WALKED_ELEMENTS } from "./array-length.js";
import { copyArrayLike, iterableOrCopy } from "./array-likes.js";
import { apply, type Method, replaceBuiltin as replace, replaceConstructor } from "./builtin-wrap.js";
import { MAX_NATIVE_CALLBACK_WALK, withCallbackInJavaScript } from "./callback-bounds.js";
import { boundedLocales } from "./locale-bounds.js";
import { isPlainArray } from "./plain-arrays.js";
import { realConstructorOf, sortInRuns, sortsInRuns } from "./typed-sort.js";

export { MAX_NATIVE_SORT_ELEMENTS, numericOrder } from "./typed-sort.js";

const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
const TypedArray = Object.getPrototypeOf(Uint8Array) as object;
/** The real length, not one a subclass or an own property reports (found by the fixes' review). */
const lengthOfTyped = getOwnPropertyDescriptor(typedArrayPrototype, "length")?.get as Method;
const tagOfTyped = getOwnPropertyDescriptor(typedArrayPrototype, Symbol.toStringTag)?.get as Method;
const byteLengthOfBuffer = getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")?.get as Method;
const nativeSet = (typedArrayPrototype as Record<string, unknown>).set as Method;

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

/** Whether `value` is a plain array within the walk bound. */
function isPlainWithin(value: unknown): boolean {
  return isPlainArray(value) && value.length <= MAX_WALKED_ELEMENTS;
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
      // A length, another typed array, a plain array within the bound or a buffer go on as they
      // are; the buffer's check, which throws for anything else, last (a throw costs microseconds).
      if (args.length > 0 && first !== null && (typeof first === "object" || typeof first === "function"))
        if (!isTypedArray(first) && !isPlainWithin(first) && !isArrayBuffer(first))
          args[0] = iterableOrCopy(first, name);
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

/** Long sorts in runs (typed-sort.ts); `toSorted` sorts a copy of the real kind so. */
function boundSorts(): void {
  replace(
    typedArrayPrototype,
    "sort",
    (original) =>
      ({
        m(this: unknown, compare?: unknown) {
          const length = apply(lengthOfTyped, this, []) as number;
          return sortsInRuns(length, compare)
            ? sortInRuns(this as object, compare)
            : apply(original, this, [compare]);
        },
      }).m,
  );
  replace(
    typedArrayPrototype,
    "toSorted",
    (original) =>
      ({
        m(this: unknown, compare?: unknown) {
          const length = apply(lengthOfTyped, this, []) as number;
          if (!sortsInRuns(length, compare)) return apply(original, this, [compare]);
          const copy = new (realConstructorOf(this as object))(length);
          apply(nativeSet, copy, [this]);
          return sortInRuns(copy, compare);
        },
      }).m,
  );
}

/** Methods that call a callback at each element: over long arrays, through JavaScript. */
const TAKING_CALLBACKS = [
  "every",
  "filter",
  "find",
  "findIndex",
  "findLast",
  "findLastIndex",
  "forEach",
  "map",
  "reduce",
  "reduceRight",
  "some",
] as const;

function callbacksInJavaScript(): void {
  for (const name of TAKING_CALLBACKS)
    replace(
      typedArrayPrototype,
      name,
      (original) =>
        ({
          m(this: unknown) {
            const long =
              isTypedArray(this) && (apply(lengthOfTyped, this, []) as number) > MAX_NATIVE_CALLBACK_WALK;
            // biome-ignore lint/complexity/noArguments: the arguments given (the callback wrapped when long)
            return apply(original, this, long ? withCallbackInJavaScript(arguments, false) : arguments);
          },
        }).m,
    );
}

export function boundTypedArrays(): void {
  boundConstructorsAndFrom();
  toLocaleStringInJavaScript();
  boundSorts();
  callbacksInJavaScript();
}
