/**
 * The generic array methods, bounded: they walk a receiver's `length` in C++ where V8 cannot stop
 * them, so a walk over more than {@link MAX_WALKED_ELEMENTS} is refused, a length is read once, and
 * `concat`, `flat` and `flatMap` walk anything but plain arrays in JavaScript (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them).
 */
import {
  concatWalking,
  flatWalking,
  MAX_NATIVE_SEARCHED_CHARS,
  searchInJavaScript,
} from "./array-in-javascript.js";
import { lengthOf, MAX_SORTED_ELEMENTS, MAX_WALKED_ELEMENTS, tooLong } from "./array-length.js";
import { apply, type Method, replaceBuiltin as replace } from "./builtin-wrap.js";
import {
  defaultOrder,
  MAX_NATIVE_CALLBACK_WALK,
  METHODS_TAKING_CALLBACKS,
  needsOrderInJavaScript,
  withCallbackInJavaScript,
} from "./callback-bounds.js";
import { isPlainArray, isProxy } from "./plain-arrays.js";

export { MAX_WALKED_ELEMENTS } from "./array-length.js";

const isArray = Array.isArray;
/** Captured: an `Object` capsule code replaced must not choose what a bound looks at. */
const toObject = Object;

/**
 * Array methods that walk their receiver's `length` where V8 may not stop them: over holes they
 * call no capsule code between steps (on `{ length: 2 ** 40 }` under a 20 ms timeout, `includes`,
 * `indexOf`, `forEach`, `every`, `filter`, `reduce`, `shift`, `unshift`, `reverse`, `copyWithin`
 * and `join` ran on; `find`, `findIndex`, `findLast`, `findLastIndex` and the iterators stopped
 * with a callback of JavaScript). The rest are here as the same kind of walk.
 */
const WALKING_METHODS = [
  // With a callback: it may be a built-in, which V8 calls without a step it can stop at.
  ...METHODS_TAKING_CALLBACKS,
  "copyWithin",
  "fill",
  "includes",
  "indexOf",
  "join",
  "lastIndexOf",
  "reverse",
  "shift",
  "slice",
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

/** Methods whose first argument is a callback (or a sort's comparison) V8 calls at each step. */
const TAKING_CALLBACKS = new Set<string>([...METHODS_TAKING_CALLBACKS, "sort", "toSorted"]);

const RealProxy = Proxy;
const reflectGet = Reflect.get;
const reflectHas = Reflect.has;
const reflectSet = Reflect.set;
const reflectDeleteProperty = Reflect.deleteProperty;
const reflectDefineProperty = Reflect.defineProperty;
const reflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;

/**
 * `object` behind a proxy that reports `length` as read once, `length`, and reaches every element
 * through JavaScript, where V8 can stop a walk: a getter that answers 0 to the bound's look and
 * 2 ** 40 to the built-in's gets past no bound this way. Writes and deletes go through it too:
 * `fill` over an array-like of 8 Mi wrote in C++ for 8 s (found by review).
 */
function withFixedLength(object: object, length: number): object {
  const fixed: object = new RealProxy(object, {
    get: (target, key, receiver) =>
      key === "length" ? length : reflectGet(target, key, receiver === fixed ? target : receiver),
    has: (target, key) => reflectHas(target, key),
    set: (target, key, value, receiver) =>
      reflectSet(target, key, value, receiver === fixed ? target : receiver),
    deleteProperty: (target, key) => reflectDeleteProperty(target, key),
    defineProperty: (target, key, descriptor) => reflectDefineProperty(target, key, descriptor),
    getOwnPropertyDescriptor: (target, key) => reflectGetOwnPropertyDescriptor(target, key),
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
  const object = toObject(receiver) as object;
  const length = lengthOf(object);
  if (length > MAX_WALKED_ELEMENTS) throw tooLong(name, length);
  const fixed = withFixedLength(object, length);
  const result = apply(original, fixed, args);
  return result === fixed ? object : result;
}

/** Whether `concat` of these may run as the built-in: plain arrays, whose length is their own, and primitives. */
function concatIsPlain(receiver: unknown, items: unknown[]): boolean {
  if (!isPlainArray(receiver)) return false;
  // Index loops: an iterator capsule code replaced must not choose what a bound looks at.
  for (let i = 0; i < items.length; i++) if (!isPlainItem(items[i])) return false;
  return true;
}

/** A primitive or a plain array: what the built-in `concat` takes as it is. */
function isPlainItem(value: unknown): boolean {
  return value === null || (typeof value !== "object" && typeof value !== "function") || isPlainArray(value);
}

/**
 * Installs the bounds on `Array.prototype`'s walking methods (a long walk over a plain array also
 * calls its callback through JavaScript: callback-bounds.ts), on `concat`, and `flat` and
 * `flatMap` in JavaScript.
 */
export function boundArrayWalks(): void {
  for (const name of WALKING_METHODS) {
    // Decided here: a `Set.prototype.has` capsule code replaced must not lift the bound.
    const bounded = !ALLOCATING.has(name);
    const takesCallback = TAKING_CALLBACKS.has(name);
    const sorts = name === "sort" || name === "toSorted";
    const most = sorts ? MAX_SORTED_ELEMENTS : MAX_WALKED_ELEMENTS;
    const searches = name === "includes" || name === "indexOf" || name === "lastIndexOf";
    replace(
      Array.prototype,
      name,
      (original) =>
        // A method, not an arrow: `this` is the receiver, as the original's.
        ({
          m(this: unknown) {
            // The plain case first, in place, with the arguments as they came (a rest array and a
            // call more cost about 100 ns a call, on every map and forEach).
            if (isArray(this) && !isProxy(this)) {
              if (bounded && this.length > most) throw tooLong(name, this.length, most);
              if (searches) {
                // biome-ignore lint/complexity/noArguments: the method keeps no named parameters
                const search = arguments[0];
                if (typeof search === "string" && search.length > MAX_NATIVE_SEARCHED_CHARS)
                  // biome-ignore lint/complexity/noArguments: the arguments given
                  return searchInJavaScript(name, this, arguments);
              }
              if (
                sorts &&
                // biome-ignore lint/complexity/noArguments: as above
                arguments[0] === undefined &&
                this.length <= MAX_NATIVE_CALLBACK_WALK &&
                needsOrderInJavaScript(this)
              )
                return apply(original, this, [defaultOrder]);
              if (takesCallback && this.length > MAX_NATIVE_CALLBACK_WALK)
                // biome-ignore lint/complexity/noArguments: the arguments given, the callback wrapped
                return apply(original, this, withCallbackInJavaScript(arguments, sorts));
              // biome-ignore lint/complexity/noArguments: passes on exactly the arguments given
              return apply(original, this, arguments);
            }
            // biome-ignore lint/complexity/noArguments: as above
            return walkBounded(name, original, this, arguments as unknown as unknown[]);
          },
        }).m,
    );
  }
  replace(
    Array.prototype,
    "concat",
    (original) =>
      ({
        m(this: unknown, ...args: unknown[]) {
          if (!concatIsPlain(this, args)) return concatWalking(this, args);
          let total = (this as unknown[]).length;
          for (let i = 0; i < args.length; i++) {
            const arg = args[i];
            total += isArray(arg) ? (arg as unknown[]).length : 1;
          }
          if (total > MAX_WALKED_ELEMENTS) throw tooLong("concat", total);
          return apply(original, this, args);
        },
      }).m,
  );
  flatWalking();
}
