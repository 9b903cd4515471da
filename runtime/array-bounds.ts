/**
 * The generic array methods, bounded: they walk a receiver's `length` in C++ where V8 cannot stop
 * them, so a walk over more than {@link MAX_WALKED_ELEMENTS} is refused, a length is read once, and
 * `concat`, `flat` and `flatMap` walk anything but plain arrays in JavaScript (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them).
 */
import { concatWalking, flatWalking } from "./array-in-javascript.js";
import { lengthOf, MAX_WALKED_ELEMENTS, tooLong } from "./array-length.js";
import { apply, type Method, replaceBuiltin as replace } from "./builtin-wrap.js";

export { MAX_WALKED_ELEMENTS } from "./array-length.js";

const isArray = Array.isArray;
const defineProperty = Object.defineProperty;

/**
 * Array methods that walk their receiver's `length` where V8 may not stop them: over holes they
 * call no capsule code between steps (on `{ length: 2 ** 40 }` under a 20 ms timeout, `includes`,
 * `indexOf`, `forEach`, `every`, `filter`, `reduce`, `shift`, `unshift`, `reverse`, `copyWithin`
 * and `join` ran on; `find`, `findIndex`, `findLast`, `findLastIndex` and the iterators stopped).
 * The rest are here as the same kind of walk.
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

/** Whether `concat` of these may run as the built-in: plain arrays, whose length is their own, and primitives. */
function concatIsPlain(receiver: unknown, items: unknown[]): boolean {
  if (!isPlainArray(receiver)) return false;
  for (const item of items) if (!isPlainItem(item)) return false;
  return true;
}

/** A primitive or a plain array: what the built-in `concat` takes as it is. */
function isPlainItem(value: unknown): boolean {
  return value === null || (typeof value !== "object" && typeof value !== "function") || isPlainArray(value);
}

/** FlattenIntoArray, in JavaScript: the built-in walks nested arrays' holes where V8 cannot stop it. */
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
