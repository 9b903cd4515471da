/**
 * The string methods V8 runs in C++ over a whole string, bounded by its length (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them).
 */
import { apply, replaceBuiltin as replace } from "./builtin-wrap.js";

/**
 * The longest string a replacement given as a string (not a function), or a global `match`, may
 * run over: their cost grows with the matches, in C++, about 370 ns each (`replaceAll("a", "bb")`
 * over 40 Mi characters held its thread 7.4 s). A function replacement calls JavaScript per match,
 * where V8 can stop it, and is never refused.
 */
export const MAX_REPLACED_CHARS = 2 ** 21;

/** The longest string `split` and `normalize` may walk (8 Mi characters: about 0.2 s each). */
export const MAX_SPLIT_CHARS = 2 ** 23;

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
 * Bounds the string methods V8 runs in C++ over the whole string, by its length: `replaceAll`
 * with a string pattern, `split` and `normalize` on `String.prototype`, and the RegExp methods
 * `replace`, `replaceAll`, `match` and `split` hand a regular expression to.
 */
export function boundStringWalks(): void {
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
          return apply(original, text, [pattern, replacement]);
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
          refuseReplacing("replace", text, replacement);
          return apply(original, this, [text, replacement]);
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
