/**
 * Typed arrays' built-ins that walk in C++ where V8 cannot stop them (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them): a typed array made from an array-like
 * (`new Uint8Array({ length: 1e8 })` 4.5 s; `from` and `set` alike), `toLocaleString` (one
 * 1.5e7-element array 6 s), long sorts (typed-sort.ts), and long walks calling a built-in as
 * their callback (callback-bounds.ts).
 */

import { MAX_WALKED_ELEMENTS } from "./array-length.js";
import { append, copyArrayLike } from "./array-likes.js";
import {
  apply,
  isReceiverOf,
  type Method,
  replaceBuiltin as replace,
  replaceConstructor,
  stopPoint,
} from "./builtin-wrap.js";
import {
  MAX_NATIVE_CALLBACK_WALK,
  METHODS_TAKING_CALLBACKS,
  withCallbackInJavaScript,
} from "./callback-bounds.js";
import { boundedLocales } from "./locale-bounds.js";
import { isPlainArray } from "./plain-arrays.js";
import {
  isTypedArray,
  realConstructorNamed,
  realConstructorOf,
  TYPED_ARRAYS,
  TypedArray,
  type TypedConstructor,
  typedArrayPrototype,
  typedLength,
} from "./typed-arrays.js";
import { sortInRuns, sortsInRuns } from "./typed-sort.js";

export { MAX_NATIVE_SORT_ELEMENTS, numericOrder } from "./typed-sort.js";

const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const construct = Reflect.construct;
const iteratorKey = Symbol.iterator;
/** Captured: an `Object` capsule code replaced must not choose what a bound looks at. */
const toObject = Object;
const byteLengthOfBuffer = getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")?.get as Method;
const nativeSet = typedArrayPrototype.set as Method;

function isArrayBuffer(value: unknown): boolean {
  return isReceiverOf(byteLengthOfBuffer as Method, value);
}

/** Whether `value` is a plain array within the walk bound. */
function isPlainWithin(value: unknown): boolean {
  return isPlainArray(value) && value.length <= MAX_WALKED_ELEMENTS;
}

/**
 * The values a typed array is made or set from, `source` being an object but not a typed array: a
 * plain array within the bound as it is, an iterable's values collected in JavaScript (its method
 * read once), an array-like copied by {@link copyArrayLike}.
 */
function valuesOf(source: object, qualified: string): ArrayLike<unknown> {
  if (isPlainWithin(source)) return source as unknown[];
  const method = (source as { [iteratorKey]?: unknown })[iteratorKey];
  if (method === undefined || method === null) return copyArrayLike(source, qualified);
  const values: unknown[] = [];
  let count = 0;
  const iterable = {
    [iteratorKey]: () => apply(method as Method, source, []),
  } as unknown as Iterable<unknown>;
  for (const value of iterable) {
    stopPoint();
    append(values, count++, value);
  }
  return values;
}

/**
 * `values` converted to typed array kind `Real` one element at a time in JavaScript: each
 * conversion may run long (a 16 Mi-character numeric string, a built-in `valueOf`), and V8 can
 * stop between them, not inside the built-in's own loop (found by review: 100 such strings held
 * the thread 1.3 s). The result is a typed array, which the built-in copies as it is.
 */
function convertedTo(Real: TypedConstructor, values: ArrayLike<unknown>): object {
  const length = values.length;
  const converted = new Real(length) as unknown as Record<number, unknown>;
  for (let i = 0; i < length; i++) {
    stopPoint();
    converted[i] = values[i];
  }
  return converted;
}

function boundConstructorsAndFrom(): void {
  for (const name of TYPED_ARRAYS) {
    const Real = realConstructorNamed(name);
    replaceConstructor(globalThis, name, (args) => {
      const first = args[0];
      // A length, another typed array or a buffer go on as they are (the buffer's check, which
      // throws for anything else, last: a throw costs microseconds); values are converted first.
      if (args.length > 0 && first !== null && (typeof first === "object" || typeof first === "function"))
        if (!isTypedArray(first) && (isPlainArray(first) || !isArrayBuffer(first)))
          args[0] = convertedTo(Real, valuesOf(first, name));
      return args;
    });
  }
  replace(
    TypedArray,
    "from",
    (original) =>
      ({
        m(this: unknown, source: unknown, map?: unknown, thisArgument?: unknown) {
          if (map !== undefined && typeof map !== "function")
            throw new TypeError("TypedArray.from: the map function must be a function");
          if (source === null || source === undefined)
            return apply(original, this, [source, map, thisArgument]);
          // Typed arrays too: one whose iterator was removed is read by its own `length`.
          const values = valuesOf(toObject(source) as object, "TypedArray.from");
          const length = values.length;
          const target = construct(this as TypedConstructor, [length]) as Record<number, unknown>;
          if (!isTypedArray(target) || typedLength(target) < length)
            throw new TypeError("TypedArray.from: the constructor did not make a typed array long enough");
          for (let k = 0; k < length; k++) {
            stopPoint();
            target[k] = map === undefined ? values[k] : apply(map as Method, thisArgument, [values[k], k]);
          }
          return target;
        },
      }).m,
  );
  replace(
    typedArrayPrototype,
    "set",
    (original) =>
      ({
        m(this: unknown, source: unknown, offset?: unknown) {
          // `set` walks anything but a typed array as an array-like (a string's characters too).
          if (source === null || source === undefined || isTypedArray(source) || !isTypedArray(this))
            return apply(original, this, [source, offset]);
          const values = isPlainWithin(source)
            ? (source as unknown[])
            : copyArrayLike(toObject(source) as object, "TypedArray.prototype.set");
          return apply(original, this, [convertedTo(realConstructorOf(this as object), values), offset]);
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
          const length = typedLength(this);
          const list = boundedLocales(locales);
          let text = "";
          for (let i = 0; i < length; i++) {
            stopPoint();
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
          const length = typedLength(this);
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
          const length = typedLength(this);
          if (!sortsInRuns(length, compare)) return apply(original, this, [compare]);
          const copy = new (realConstructorOf(this as object))(length);
          apply(nativeSet, copy, [this]);
          return sortInRuns(copy, compare);
        },
      }).m,
  );
}

function callbacksInJavaScript(): void {
  for (const name of METHODS_TAKING_CALLBACKS)
    replace(
      typedArrayPrototype,
      name,
      (original) =>
        ({
          m(this: unknown) {
            const long = isTypedArray(this) && typedLength(this) > MAX_NATIVE_CALLBACK_WALK;
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
