/**
 * Callbacks that V8 calls from C++ without a step where it can stop: a built-in handed as the
 * callback (`new Float64Array(1e7).forEach(new Intl.NumberFormat("en").format)` held its thread
 * 2.4 s; `"a".repeat(1e7).replaceAll("a", format)` 7.9 s), and the default order of an array's
 * `sort` (2e6 numbers compared as strings 7.6 s). Over long walks a callback is called through a
 * JavaScript function, where V8 can stop, and the default order is given as one (docs/security.md,
 * "Isolates"; array-bounds.ts, typed-array-bounds.ts and string-bounds.ts use these).
 */
import { apply, replaceBuiltin as replace } from "./builtin-wrap.js";

/** Walks longer than this call their callback through JavaScript (a built-in callback's 65,536 calls take about 16 ms). */
export const MAX_NATIVE_CALLBACK_WALK = 2 ** 16;

/**
 * The methods of arrays and typed arrays that call their first argument, a callback, at each
 * element (an array's `sort` and `toSorted` call theirs as a comparison: array-bounds.ts).
 */
export const METHODS_TAKING_CALLBACKS = [
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

/** `callback` behind a JavaScript function, so that V8 can stop between its calls. */
export function inJavaScript(callback: unknown): unknown {
  if (typeof callback !== "function") return callback;
  return function (this: unknown) {
    // biome-ignore lint/complexity/noArguments: passes on exactly the arguments the built-in gives
    return apply(callback as (...args: unknown[]) => unknown, this, arguments);
  };
}

/** The order `sort` gives without a comparison: by the elements' strings, code unit by code unit. */
export function defaultOrder(a: unknown, b: unknown): number {
  const x = `${a as string}`;
  const y = `${b as string}`;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Strings longer than this make a short array's default sort compare through JavaScript. */
const MAX_NATIVE_SORTED_CHARS = 2 ** 12;

/**
 * Whether a sort of `array` without a comparison must compare through {@link defaultOrder}: V8
 * compares the elements' strings in C++, and long ones (an object's `toString` may answer any)
 * held the thread (512 prefixes of one 16 Mi string 3.2 s; found by review).
 */
export function needsOrderInJavaScript(array: unknown[]): boolean {
  for (let i = 0; i < array.length; i++) {
    const value = array[i];
    if (
      typeof value === "string"
        ? value.length > MAX_NATIVE_SORTED_CHARS
        : typeof value === "object"
          ? value !== null
          : typeof value === "function"
    )
      return true;
  }
  return false;
}

/** `JSON.parse` calls its reviver through JavaScript (a built-in reviver ran 1e6 calls in C++ for 2 s). */
export function boundJsonReviver(): void {
  replace(
    JSON,
    "parse",
    (original) =>
      ({
        parse(text: unknown, reviver?: unknown) {
          return apply(
            original,
            JSON,
            typeof reviver === "function" ? [text, inJavaScript(reviver)] : [text],
          );
        },
      }).parse,
  );
}

/**
 * The arguments of a walking method whose first one is its callback (or a sort's comparison),
 * that callback behind JavaScript; a sort without a comparison gets {@link defaultOrder}. The
 * count of arguments is kept: `reduce` tells an initial value by it.
 */
export function withCallbackInJavaScript(args: ArrayLike<unknown>, sorts: boolean): unknown[] {
  const first = args[0];
  const callback = sorts && first === undefined ? defaultOrder : inJavaScript(first);
  return args.length >= 2 ? [callback, args[1]] : [callback];
}
