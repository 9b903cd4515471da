/**
 * Built-ins that turn an array-like into a list in C++ where V8 cannot stop them: the argument
 * list of `Function.prototype.apply`, `Reflect.apply` and `Reflect.construct`
 * (`Math.max.apply(null, { length: 1e8 })` held its thread 3.4 s), and `Array.from` of an
 * array-like (`Array.from({ length: 2 ** 32 - 1 })` ran 13 s and then V8 ran out of memory).
 * docs/security.md, "Isolates"; builtin-bounds.ts installs them.
 */
import { copyArrayLike, iterableOrCopy } from "./array-likes.js";
import { apply, type Method, replaceBuiltin as replace, stopPoint } from "./builtin-wrap.js";
import { isPlainArray } from "./plain-arrays.js";
import { isTypedArray, TypedArray, typedLength } from "./typed-arrays.js";

/**
 * The longest argument list a call may spread: no more fit on an isolate's stack (half a million
 * overflow it), so nothing that could work is refused.
 */
export const MAX_ARGUMENTS = 2 ** 20;

/** Not `Function.prototype`: the runtime's lockdown has replaced the global `Function` by then. */
const functionPrototype = Object.getPrototypeOf(() => {}) as object;

/**
 * `list` as a call may spread it: a plain array, or a typed array (V8 takes its own length), within
 * {@link MAX_ARGUMENTS} as it is; anything not an object as it is, for the built-in's TypeError;
 * any other array-like copied within the bound (an `arguments` object too: its `length` can be
 * set).
 */
function argumentList(list: unknown, qualified: string): unknown {
  if (list === null || (typeof list !== "object" && typeof list !== "function")) return list;
  if (isPlainArray(list) && list.length <= MAX_ARGUMENTS) return list;
  if (isTypedArray(list) && typedLength(list) <= MAX_ARGUMENTS) return list;
  return copyArrayLike(list, qualified, MAX_ARGUMENTS);
}

/** Argument lists longer than this are converted to numbers in JavaScript first (see below). */
const MAX_NATIVE_CONVERSIONS = 4;

/**
 * Built-ins that convert each of any number of arguments to a number in one C++ loop: a long
 * numeric string takes about 13 ms to convert (16 Mi characters), so `Math.max(...list)` of such
 * strings ran on with no point to stop at. Past {@link MAX_NATIVE_CONVERSIONS} arguments they are
 * converted here, each at a stop point, in the same order (ToNumber, as the built-in does first).
 */
const CONVERTING_EVERY_ARGUMENT: [object, string][] = [
  [Math, "max"],
  [Math, "min"],
  [Math, "hypot"],
  [String, "fromCharCode"],
  [String, "fromCodePoint"],
];

function boundConversions(): void {
  for (const [holder, name] of CONVERTING_EVERY_ARGUMENT)
    replace(
      holder,
      name,
      (original) =>
        ({
          m(this: unknown, ...args: unknown[]) {
            // In place: the rest array's own elements, never a setter on Array.prototype.
            if (args.length > MAX_NATIVE_CONVERSIONS)
              for (let i = 0; i < args.length; i++) {
                stopPoint();
                args[i] = +(args[i] as number);
              }
            return apply(original, this, args);
          },
        }).m,
    );
  // A typed array's `of` converts each item as it stores it: past the same count, through
  // `from`'s bounded path (typed-array-bounds.ts), which stores them one by one in JavaScript.
  replace(
    TypedArray,
    "of",
    (original) =>
      ({
        m(this: unknown, ...items: unknown[]) {
          return items.length > MAX_NATIVE_CONVERSIONS
            ? apply((TypedArray as { from: Method }).from, this, [items])
            : apply(original, this, items);
        },
      }).m,
  );
}

export function boundArgumentLists(): void {
  boundConversions();
  replace(
    functionPrototype,
    "apply",
    (original) =>
      ({
        m(this: unknown, thisArgument: unknown, list: unknown) {
          return apply(original, this, [thisArgument, argumentList(list, "Function.prototype.apply")]);
        },
      }).m,
  );
  replace(
    Reflect,
    "apply",
    (original) =>
      ({
        m(target: unknown, thisArgument: unknown, list: unknown) {
          return apply(original, undefined, [target, thisArgument, argumentList(list, "Reflect.apply")]);
        },
      }).m,
  );
  replace(
    Reflect,
    "construct",
    (original) =>
      ({
        m(target: unknown, list: unknown, ...newTarget: unknown[]) {
          const bounded = argumentList(list, "Reflect.construct");
          // Without a third argument, new.target is the target itself.
          return apply(
            original,
            undefined,
            newTarget.length > 0 ? [target, bounded, newTarget[0]] : [target, bounded],
          );
        },
      }).m,
  );
  replace(
    Array,
    "from",
    (original) =>
      ({
        m(this: unknown, items: unknown, map?: unknown, thisArgument?: unknown) {
          return apply(original, this, [iterableOrCopy(items, "Array.from"), map, thisArgument]);
        },
      }).m,
  );
}
