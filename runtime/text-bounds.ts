/**
 * Text built-ins whose C++ work grows with a long string's length, bounded by it (docs/security.md,
 * "Isolates"; builtin-bounds.ts installs them): collation (16 Mi decomposable characters differing
 * at the first held the thread 1.8 s), `Intl.Segmenter` (0.75 s over 5e7), `encodeURI` and
 * `encodeURIComponent` (0.56 s over 1.2e7), `Date.parse` (1.2 s over 1e8; date-bounds.ts), and
 * `Symbol.for`, whose key V8 copies outside the heap limit's reach (7e7 characters ended the
 * process).
 */
import { apply, type Method, replaceBuiltin as replace } from "./builtin-wrap.js";
import { boundedLocales } from "./locale-bounds.js";

/** The most characters one collation (`localeCompare`, a collator's `compare`) may compare, both strings together. */
export const MAX_COLLATED_CHARS = 2 ** 21;
/** The longest string `Intl.Segmenter` may segment. */
export const MAX_SEGMENTED_CHARS = 2 ** 23;
/** The longest string `encodeURI` and `encodeURIComponent` may encode. */
export const MAX_ENCODED_CHARS = 2 ** 21;
/** The longest key `Symbol.for` may register. */
export const MAX_SYMBOL_KEY_CHARS = 2 ** 20;

const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const defineProperty = Object.defineProperty;
const weakMapGet = WeakMap.prototype.get;
const weakMapSet = WeakMap.prototype.set;

function tooLongText(qualified: string, length: number, most: number): RangeError {
  return new RangeError(`${qualified} on ${length} characters: capsules may run it over at most ${most}.`);
}

/** The two strings a collation compares, each converted once, refused together past the bound. */
function collated(qualified: string, x: unknown, y: unknown): [string, string] {
  const a = `${x as string}`;
  const b = `${y as string}`;
  if (a.length + b.length > MAX_COLLATED_CHARS)
    throw tooLongText(qualified, a.length + b.length, MAX_COLLATED_CHARS);
  return [a, b];
}

/** A collator's bound `compare`, bounded: one per collator, as the built-in's. */
function boundCollatorCompare(): void {
  const prototype = Intl.Collator.prototype;
  const compareGetter = getOwnPropertyDescriptor(prototype, "compare")?.get as Method;
  const made = new WeakMap<object, unknown>();
  const boundedCompare = (real: (a: string, b: string) => number) => (x: unknown, y: unknown) =>
    apply(real, undefined, collated("Intl.Collator compare", x, y));
  defineProperty(prototype, "compare", {
    get(this: object) {
      const real = apply(compareGetter, this, []) as (a: string, b: string) => number;
      let compare = apply(weakMapGet, made, [this]);
      if (compare === undefined) {
        compare = boundedCompare(real);
        apply(weakMapSet, made, [this, compare]);
      }
      return compare;
    },
    configurable: true,
  });
}

/** Replaces `holder[name]`, a function of one string, by one that refuses it past `most`. */
function boundTextArgument(holder: object, name: string, qualified: string, most: number): void {
  replace(
    holder,
    name,
    (original) =>
      ({
        m(this: unknown, value: unknown) {
          const text = `${value as string}`;
          if (text.length > most) throw tooLongText(qualified, text.length, most);
          return apply(original, this, [text]);
        },
      }).m,
  );
}

export function boundTextWalks(): void {
  replace(
    String.prototype,
    "localeCompare",
    (original) =>
      ({
        m(this: unknown, that: unknown, locales?: unknown, options?: unknown) {
          if (this === null || this === undefined) return apply(original, this, [that, locales, options]);
          // Indexed, not destructured: an array iterator capsule code replaced must not choose them.
          const strings = collated("String.prototype.localeCompare", this, that);
          return apply(original, strings[0], [strings[1], boundedLocales(locales), options]);
        },
      }).m,
  );
  boundCollatorCompare();
  boundTextArgument(Intl.Segmenter.prototype, "segment", "Intl.Segmenter segment", MAX_SEGMENTED_CHARS);
  boundTextArgument(globalThis, "encodeURI", "encodeURI", MAX_ENCODED_CHARS);
  boundTextArgument(globalThis, "encodeURIComponent", "encodeURIComponent", MAX_ENCODED_CHARS);
  boundTextArgument(Symbol, "for", "Symbol.for", MAX_SYMBOL_KEY_CHARS);
}
