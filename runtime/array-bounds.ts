/**
 * The generic array methods, bounded: they walk a receiver's `length` in C++ where V8 cannot stop
 * them, so a walk over more than {@link MAX_WALKED_ELEMENTS} is refused, a length is read once, and
 * `concat`, `flat` and `flatMap` walk anything but plain arrays in JavaScript (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them).
 */
import { apply, type Method, replaceBuiltin as replace } from "./builtin-wrap.js";

const construct = Reflect.construct;
const isArray = Array.isArray;
const defineProperty = Object.defineProperty;
const isConcatSpreadable = Symbol.isConcatSpreadable;

/**
 * The most elements a generic array method may walk. A dense array of 8 Mi numbers takes 64 MiB of
 * the isolate's 128 MiB heap, so a real array seldom comes near; past it, the walk is over a sparse
 * array's holes or an array-like's `length`, where each step costs a C++ lookup (0.3 s for 8 Mi on
 * an idle core, the slowest measured).
 */
export const MAX_WALKED_ELEMENTS = 2 ** 23;

/**
 * Array methods that walk their receiver's `length` where V8 cannot stop them: over holes they call
 * no capsule code between steps (each was tried on `{ length: 2 ** 40 }` under a 20 ms timeout;
 * `find`, `findIndex`, `findLast`, `findLastIndex` and the iterators stopped, these did not).
 */
const WALKING_METHODS = [
  "copyWithin",
  "every",
  "fill",
  "filter",
  "forEach",
  "includes",
  "indexOf",
  "join",
  "lastIndexOf",
  "map",
  "reduce",
  "reduceRight",
  "reverse",
  "shift",
  "slice",
  "some",
  "sort",
  "splice",
  "toLocaleString",
  "toReversed",
  "toSorted",
  "toSpliced",
  "unshift",
  "with",
] as const;

/**
 * Methods whose walk over a plain array allocates what it walks: past the heap, V8 fails at the
 * allocation (the host contains that as any isolate V8 gives up on: docs/security.md, "Crash
 * containment"), and no walk runs over holes for long.
 */
const ALLOCATING = new Set<string>(["fill"]);

/** `value.length` as the array methods read it (ToLength), read once. */
function lengthOf(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const length = Number((value as { length?: unknown }).length);
  if (!(length > 0)) return 0;
  return Math.min(Math.floor(length), Number.MAX_SAFE_INTEGER);
}

function tooLong(method: string, length: number): RangeError {
  return new RangeError(
    `Array.prototype.${method} on ${length} elements: capsules may walk at most ${MAX_WALKED_ELEMENTS} (a sparse array or an array-like object this long is refused; use a Map or an object keyed by index).`,
  );
}

const RealProxy = Proxy;
const reflectGet = Reflect.get;
const reflectHas = Reflect.has;
/**
 * Every proxy capsule code made. An array behind one passes `Array.isArray` yet may report one
 * `length` to a bound's look and another to the built-in after it (found by the fixes' review).
 */
const proxies = new WeakSet<object>();

/** `Proxy` and `Proxy.revocable` as before, noting each proxy made in {@link proxies}. */
export function trackProxies(): void {
  const makeProxy = function (this: unknown, target: object, handler: ProxyHandler<object>): object {
    if (!new.target) throw new TypeError("Constructor Proxy requires 'new'");
    const made = new RealProxy(target, handler);
    proxies.add(made);
    return made;
  };
  // Bound: constructible, and like the real one without a `prototype` property.
  const tracked = makeProxy.bind(undefined) as unknown as ProxyConstructor;
  defineProperty(tracked, "name", { value: "Proxy" });
  defineProperty(tracked, "revocable", {
    value: {
      revocable(target: object, handler: ProxyHandler<object>) {
        const made = RealProxy.revocable(target, handler);
        proxies.add(made.proxy);
        return made;
      },
    }.revocable,
    writable: true,
    configurable: true,
  });
  defineProperty(globalThis, "Proxy", { value: tracked, writable: true, configurable: true });
}

/** Whether `value` is an array whose `length` is its own plain number (no proxy in front). */
function isPlainArray(value: unknown): value is unknown[] {
  return isArray(value) && !proxies.has(value as object);
}

/**
 * `object` behind a proxy that reports `length` as read once, `length`, and reaches every element
 * through JavaScript, where V8 can stop a walk: a getter that answers 0 to the bound's look and
 * 2 ** 40 to the built-in's gets past no bound this way.
 */
function withFixedLength(object: object, length: number): object {
  const fixed: object = new RealProxy(object, {
    get: (target, key, receiver) =>
      key === "length" ? length : reflectGet(target, key, receiver === fixed ? target : receiver),
    has: (target, key) => reflectHas(target, key),
  });
  return fixed;
}

/**
 * Runs built-in `original` on `receiver` within {@link MAX_WALKED_ELEMENTS}: a plain array as it
 * is, anything else with its length read once (see {@link withFixedLength}).
 */
function walkBounded(name: string, original: Method, receiver: unknown, args: unknown[]): unknown {
  if (isPlainArray(receiver)) {
    if (receiver.length > MAX_WALKED_ELEMENTS) throw tooLong(name, receiver.length);
    return apply(original, receiver, args);
  }
  // null and undefined: the built-in's own TypeError.
  if (receiver === null || receiver === undefined) return apply(original, receiver, args);
  const object = Object(receiver) as object;
  const length = lengthOf(object);
  if (length > MAX_WALKED_ELEMENTS) throw tooLong(name, length);
  const fixed = withFixedLength(object, length);
  const result = apply(original, fixed, args);
  return result === fixed ? object : result;
}

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
function concatWalking(receiver: unknown, items: unknown[]): unknown {
  if (receiver === null || receiver === undefined)
    throw new TypeError("Array.prototype.concat called on null or undefined");
  const object = Object(receiver) as object;
  const result = arraySpeciesCreate(object);
  let n = 0;
  for (const item of [object, ...items]) {
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

/** Whether `concat` of these may run as the built-in: plain arrays, whose length is their own, and primitives. */
function concatIsPlain(receiver: unknown, items: unknown[]): boolean {
  const plain = (value: unknown) =>
    value === null || (typeof value !== "object" && typeof value !== "function") || isPlainArray(value);
  if (!isPlainArray(receiver)) return false;
  for (const item of items) if (!plain(item)) return false;
  return true;
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
function flatWalking(): void {
  const toObject = (receiver: unknown, name: string): object => {
    if (receiver === null || receiver === undefined)
      throw new TypeError(`Array.prototype.${name} called on null or undefined`);
    return Object(receiver) as object;
  };
  replace(
    Array.prototype,
    "flat",
    () =>
      ({
        m(this: unknown, depth?: unknown) {
          const object = toObject(this, "flat");
          const length = lengthOf(object);
          if (length > MAX_WALKED_ELEMENTS) throw tooLong("flat", length);
          let levels = 1;
          if (depth !== undefined) {
            const number = Number(depth);
            levels = Number.isNaN(number) ? 0 : Math.max(0, Math.trunc(number));
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
          const object = toObject(this, "flatMap");
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

/** Bounds the generic array methods' walks by {@link MAX_WALKED_ELEMENTS}. */
export function boundArrayWalks(): void {
  for (const name of WALKING_METHODS)
    replace(
      Array.prototype,
      name,
      (original) =>
        // A method, not an arrow: `this` is the receiver, as the original's.
        ({
          m(this: unknown) {
            // The plain case first, in place, with the arguments as they came (a rest array and a
            // call more cost about 100 ns a call, on every map and forEach).
            if (isArray(this) && !proxies.has(this)) {
              if (this.length > MAX_WALKED_ELEMENTS && !ALLOCATING.has(name))
                throw tooLong(name, this.length);
              // biome-ignore lint/complexity/noArguments: passes on exactly the arguments given
              return apply(original, this, arguments);
            }
            // biome-ignore lint/complexity/noArguments: as above
            return walkBounded(name, original, this, arguments as unknown as unknown[]);
          },
        }).m,
    );
  replace(
    Array.prototype,
    "concat",
    (original) =>
      ({
        m(this: unknown, ...args: unknown[]) {
          if (!concatIsPlain(this, args)) return concatWalking(this, args);
          let total = (this as unknown[]).length;
          for (const arg of args) total += isArray(arg) ? (arg as unknown[]).length : 1;
          if (total > MAX_WALKED_ELEMENTS) throw tooLong("concat", total);
          return apply(original, this, args);
        },
      }).m,
  );
  flatWalking();
}
