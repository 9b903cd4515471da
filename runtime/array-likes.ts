/**
 * Array-likes handed to built-ins that walk them in C++ (a typed array's constructor, `from` and
 * `set`, `Array.from`, `apply`, `String.raw`, Intl's locale lists): over holes each step is a C++
 * lookup where V8 cannot stop the walk (`new Uint8Array({ length: 1e8 })` held its thread 4.5 s).
 * Here an array-like's `length` is read once and bounded, and its elements are copied in
 * JavaScript, where V8 can stop; an iterable goes on as an iterable, whose steps V8 can stop.
 */
import { lengthOf, MAX_WALKED_ELEMENTS, walkRefused } from "./array-length.js";
import { apply, stopPoint } from "./builtin-wrap.js";
import { isPlainArray } from "./plain-arrays.js";

const defineProperty = Object.defineProperty;
const hasOwn = Object.hasOwn;
const setPrototypeOf = Object.setPrototypeOf;
const iteratorKey = Symbol.iterator;

/** CreateDataPropertyOrThrow: no setter capsule code put on `Array.prototype` sees the copy. */
export function append(values: unknown[], at: number, value: unknown): void {
  defineProperty(values, at, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * The elements of array-like `source` (an object) in a new plain array, its `length` read once
 * and at most `most`. With `presentOnly`, holes are left out (Intl's locale lists skip them).
 */
export function copyArrayLike(
  source: object,
  qualified: string,
  most = MAX_WALKED_ELEMENTS,
  presentOnly = false,
): unknown[] {
  const length = lengthOf(source);
  if (length > most) throw walkRefused(qualified, length, most);
  const values: unknown[] = [];
  const elements = source as Record<number, unknown>;
  if (presentOnly) {
    let copied = 0;
    for (let i = 0; i < length; i++) {
      stopPoint();
      if (i in source) append(values, copied++, elements[i]);
    }
    return values;
  }
  // Assigned, the fast way (an arguments object to apply, on many calls); a setter capsule code
  // put on Array.prototype could take an element or change the copy's length, so the copy is
  // checked after, and made again property by property when it is not what was read.
  for (let i = 0; i < length; i++) {
    stopPoint();
    values[i] = elements[i];
  }
  if (values.length === length && (length === 0 || hasOwn(values, length - 1))) return values;
  const checked: unknown[] = [];
  for (let i = 0; i < length; i++) append(checked, i, elements[i]);
  return checked;
}

/**
 * `source` as a built-in that takes an iterable or else an array-like may have it: anything not
 * an object, and a plain array within the bound, as they are; an object with an iterator method
 * as an iterable whose method was read once (a getter that answered a method to this look could
 * answer `undefined` to the built-in's, and send it down the array-like walk); any other object
 * copied by {@link copyArrayLike}.
 */
export function iterableOrCopy(source: unknown, qualified: string): unknown {
  if (source === null || (typeof source !== "object" && typeof source !== "function")) return source;
  if (isPlainArray(source) && source.length <= MAX_WALKED_ELEMENTS) return source;
  const method = (source as { [iteratorKey]?: unknown })[iteratorKey];
  if (method === undefined || method === null) {
    // Without a prototype the copy has no iterator either, so the built-in takes it as the
    // array-like it was (`Array.from` then makes its constructor's object with the length).
    const copy = copyArrayLike(source, qualified);
    setPrototypeOf(copy, null);
    return copy;
  }
  if (typeof method !== "function") return { [iteratorKey]: method };
  return { [iteratorKey]: () => apply(method as () => unknown, source, []) };
}
