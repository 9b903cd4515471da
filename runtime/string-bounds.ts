/**
 * The string methods V8 runs in C++ over a whole string, bounded by its length (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them).
 */
import { lengthOf, MAX_WALKED_ELEMENTS, walkRefused } from "./array-length.js";
import { apply, type Method, replaceBuiltin as replace, stopPoint } from "./builtin-wrap.js";
import { inJavaScript } from "./callback-bounds.js";

const sliceOfString = String.prototype.slice as Method;
const { floor, max, min } = Math;

/**
 * The longest string a replacement given as a string (not a function), a regular expression's
 * replacement of any kind, or a global `match`, may run over: their cost grows with the matches,
 * in C++, about 370 ns each (`replaceAll("a", "bb")` over 40 Mi characters held its thread 7.4 s).
 * `replaceAll` with a string pattern and a function replacement calls it through JavaScript per
 * match (a built-in one too: callback-bounds.ts), where V8 can stop it, and is never refused.
 */
export const MAX_REPLACED_CHARS = 2 ** 21;

/** The longest string `split` and `normalize` may walk (8 Mi characters: about 0.2 s each). */
export const MAX_SPLIT_CHARS = 2 ** 23;

/**
 * The most character comparisons one call of the built-in `lastIndexOf` may make. It compares the
 * search string at every position from the end (`"a".repeat(1e6).lastIndexOf("a".repeat(1e5) +
 * "b")` ran over 30 s in C++); past this, it runs over slices, each within it, and V8 can stop it
 * between them. About 10 ms.
 */
export const MAX_BACKWARD_COMPARISONS = 2 ** 24;

function tooLongString(method: string, length: number, most: number, instead: string): RangeError {
  return new RangeError(
    `String.prototype.${method} on ${length} characters: capsules may run it over at most ${most}${instead}.`,
  );
}

/**
 * `receiver` as the string a string method works on, converted once (a boxed string, or an
 * object whose `toString` answers short to a bound's look and long to the built-in's, got past
 * the bound; found by the fixes' review). null and undefined stay, for the built-in's TypeError.
 */
function textOf(receiver: unknown): unknown {
  return receiver === null || receiver === undefined ? receiver : `${receiver as string}`;
}

/**
 * `lastIndexOf` of `pattern` in `text` from `position` (already a number), slice by slice from the
 * end, each slice's search within {@link MAX_BACKWARD_COMPARISONS}.
 */
function lastIndexOfBySlices(original: Method, text: string, pattern: string, position: number): number {
  // biome-ignore lint/suspicious/noSelfCompare: NaN, without a Number.isNaN capsule code may replace
  const start = position !== position ? text.length : max(0, floor(position));
  const last = min(start, text.length - pattern.length);
  const width = max(1, floor(MAX_BACKWARD_COMPARISONS / pattern.length));
  for (let high = last; high >= 0; high -= width) {
    stopPoint();
    const low = max(0, high - width + 1);
    const slice = apply(sliceOfString, text, [low, high + pattern.length]);
    const found = apply(original, slice, [pattern]) as number;
    if (found >= 0) return low + found;
  }
  return -1;
}

/** `lastIndexOf`, bounded by {@link lastIndexOfBySlices} when its search could compare long. */
function boundBackwardSearch(): void {
  replace(
    String.prototype,
    "lastIndexOf",
    (original) =>
      ({
        m(this: unknown, search: unknown, position?: unknown) {
          const text = textOf(this);
          if (typeof text !== "string") return apply(original, text, [search, position]);
          const pattern = `${search as string}`;
          const at = +(position as number);
          const positions = text.length - pattern.length + 1;
          if (
            pattern.length === 0 ||
            positions <= 0 ||
            positions * pattern.length <= MAX_BACKWARD_COMPARISONS
          )
            return apply(original, text, [pattern, at]);
          return lastIndexOfBySlices(original, text, pattern, at);
        },
      }).m,
  );
}

/**
 * `String.raw` in JavaScript: the built-in walks its template's `raw` array-like in C++
 * (`String.raw({ raw: { length: 1e8 } })` ran over 30 s).
 */
function rawInJavaScript(): void {
  const toObject = Object;
  replace(
    String,
    "raw",
    () =>
      ({
        m(template: unknown, ...substitutions: unknown[]) {
          if (template === null || template === undefined)
            throw new TypeError("Cannot convert undefined or null to object");
          const raw = (toObject(template) as { raw?: unknown }).raw;
          if (raw === null || raw === undefined)
            throw new TypeError("Cannot convert undefined or null to object");
          const literals = toObject(raw) as Record<number, unknown>;
          const count = lengthOf(literals);
          if (count > MAX_WALKED_ELEMENTS) throw walkRefused("String.raw", count);
          let text = "";
          for (let i = 0; i < count; i++) {
            stopPoint();
            text += `${literals[i] as string}`;
            if (i + 1 < count && i < substitutions.length) text += `${substitutions[i] as string}`;
          }
          return text;
        },
      }).m,
  );
}

/**
 * Bounds the string methods V8 runs in C++ over the whole string, by its length: `replaceAll`
 * with a string pattern, `split` and `normalize` on `String.prototype`, and the RegExp methods
 * `replace`, `replaceAll`, `match` and `split` hand a regular expression to.
 */
export function boundStringWalks(): void {
  boundBackwardSearch();
  rawInJavaScript();
  const refuseReplacing = (name: string, text: unknown, replacement: unknown) => {
    if (typeof text === "string" && text.length > MAX_REPLACED_CHARS && typeof replacement !== "function")
      throw tooLongString(name, text.length, MAX_REPLACED_CHARS, "; pass the replacement as a function");
  };
  replace(
    String.prototype,
    "replaceAll",
    (original) =>
      ({
        m(this: unknown, pattern: unknown, replacement: unknown) {
          const text = textOf(this);
          refuseReplacing("replaceAll", text, replacement);
          return apply(original, text, [pattern, inJavaScript(replacement)]);
        },
      }).m,
  );
  for (const name of ["split", "normalize"])
    replace(
      String.prototype,
      name,
      (original) =>
        ({
          m(this: unknown, ...args: unknown[]) {
            const text = textOf(this);
            if (typeof text === "string" && text.length > MAX_SPLIT_CHARS)
              throw tooLongString(name, text.length, MAX_SPLIT_CHARS, "; work on slices of it");
            return apply(original, text, args);
          },
        }).m,
    );
  replace(
    RegExp.prototype,
    Symbol.replace,
    (original) =>
      ({
        m(this: unknown, string: unknown, replacement: unknown) {
          const text = `${string as string}`;
          // A function too: V8 finds every match of a regular expression in C++ before the first
          // call ("a".repeat(3e7).replace(/a/g, String) held the thread 3.3 s, then filled the heap).
          if (text.length > MAX_REPLACED_CHARS)
            throw tooLongString(
              "replace",
              text.length,
              MAX_REPLACED_CHARS,
              "; use matchAll and build the result",
            );
          return apply(original, this, [text, inJavaScript(replacement)]);
        },
      }).m,
  );
  replace(
    RegExp.prototype,
    Symbol.match,
    (original) =>
      ({
        m(this: unknown, string: unknown) {
          const text = `${string as string}`;
          if (text.length > MAX_REPLACED_CHARS)
            throw tooLongString("match", text.length, MAX_REPLACED_CHARS, "; use matchAll");
          return apply(original, this, [text]);
        },
      }).m,
  );
  replace(
    RegExp.prototype,
    Symbol.split,
    (original) =>
      ({
        m(this: unknown, string: unknown, limit?: unknown) {
          const text = `${string as string}`;
          if (text.length > MAX_SPLIT_CHARS)
            throw tooLongString("split", text.length, MAX_SPLIT_CHARS, "; work on slices of it");
          return apply(original, this, [text, limit]);
        },
      }).m,
  );
}
