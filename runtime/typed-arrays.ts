/**
 * Typed arrays' intrinsics, captured when the runtime loads, before it replaces the constructors
 * and before capsule code runs: the shared prototype, the real constructors by kind, and the
 * checks the bounds use (typed-array-bounds.ts, typed-sort.ts, call-bounds.ts).
 */
import { apply, type Method } from "./builtin-wrap.js";

/** A typed array's elements, as the bounds read and write them. */
export type Typed = { [index: number]: number | bigint };
export type TypedConstructor = {
  new (length: number): Typed;
  new (buffer: unknown, byteOffset: number, length: number): Typed;
  BYTES_PER_ELEMENT: number;
};

/** %TypedArray%.prototype, which every kind's prototype inherits from. */
export const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as Record<string, unknown>;
/** %TypedArray%, whose `from` and `of` every kind inherits. */
export const TypedArray = Object.getPrototypeOf(Uint8Array) as object;

/** A getter of %TypedArray%.prototype: it reads the internal slot, never a property capsule code set. */
export function typedGetter(key: string | symbol): Method {
  return Object.getOwnPropertyDescriptor(typedArrayPrototype, key)?.get as Method;
}

const lengthGetter = typedGetter("length");
const tagGetter = typedGetter(Symbol.toStringTag);

/** The real length of typed array `typed` (a TypeError for anything else), whatever its own `length` says. */
export function typedLength(typed: unknown): number {
  return apply(lengthGetter, typed, []) as number;
}

/** Whether `value` is a typed array (a check that runs no capsule code and never throws). */
export function isTypedArray(value: unknown): boolean {
  return apply(tagGetter, value, []) !== undefined;
}

/** The typed array kinds, by their constructors' names. */
export const TYPED_ARRAYS = [
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

/** The real constructors by name. */
const constructors: Record<string, TypedConstructor> = {};
for (const name of TYPED_ARRAYS)
  constructors[name] = (globalThis as unknown as Record<string, TypedConstructor>)[name] as TypedConstructor;

/** The real constructor of typed array kind `name` ("Uint8Array", ...). */
export function realConstructorNamed(name: string): TypedConstructor {
  return constructors[name] as TypedConstructor;
}

/** The real constructor of typed array `typed`'s kind (never its species, which capsule code chooses). */
export function realConstructorOf(typed: object): TypedConstructor {
  return constructors[apply(tagGetter, typed, []) as string] as TypedConstructor;
}
