/**
 * Intl's locale lists, bounded: every Intl constructor and every `toLocale...` method takes
 * `locales` as a string or an array-like, and walks the array-like's `length` in C++ where V8
 * cannot stop it (`(1).toLocaleString({ length: 1e8 })` held its thread 2.9 s, and
 * `new Intl.NumberFormat({ length: 2 ** 32 - 1 })` over 30 s). A list is at most
 * {@link MAX_LOCALES} long, read once and copied in JavaScript (docs/security.md, "Isolates";
 * builtin-bounds.ts installs them).
 */
import { append, copyArrayLike } from "./array-likes.js";
import {
  apply,
  isReceiverOf,
  type Method,
  replaceBuiltin as replace,
  replaceConstructor,
} from "./builtin-wrap.js";
import { isPlainArray } from "./plain-arrays.js";

/** The longest locale list a capsule may pass (real lists name a few locales). */
export const MAX_LOCALES = 1024;

const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const baseNameOfLocale = getOwnPropertyDescriptor(Intl.Locale.prototype, "baseName")?.get as Method;

function isLocale(value: unknown): boolean {
  return isReceiverOf(baseNameOfLocale as Method, value);
}

/**
 * The longest language tag Intl may parse: its parse grows faster than the tag (10,000 variants
 * took 0.6 s, 40,000 9.5 s; found by review); real tags are a few dozen characters.
 */
export const MAX_LOCALE_TAG_CHARS = 256;

/** `tag` converted once and refused past {@link MAX_LOCALE_TAG_CHARS}. */
export function boundedTag(tag: unknown): string {
  const text = `${tag as string}`;
  if (text.length > MAX_LOCALE_TAG_CHARS)
    throw new RangeError(
      `A language tag of ${text.length} characters: capsules may pass at most ${MAX_LOCALE_TAG_CHARS}.`,
    );
  return text;
}

/**
 * A tag as Intl takes it: a string, or an object other than an `Intl.Locale` (converted to its
 * string once), bounded by {@link boundedTag}; anything else as it is (Intl's own TypeError).
 */
function boundedTagOrLocale(tag: unknown): unknown {
  return typeof tag === "string" || (tag !== null && typeof tag === "object" && !isLocale(tag))
    ? boundedTag(tag)
    : tag;
}

/**
 * `locales` as Intl may walk it: a string within {@link MAX_LOCALE_TAG_CHARS}, an `Intl.Locale`,
 * and anything not an object (Intl's own answer) as they are; a list copied, holes left out as
 * Intl leaves them, each entry but a locale converted to its string once and bounded, or the list
 * refused past {@link MAX_LOCALES}.
 */
export function boundedLocales(locales: unknown): unknown {
  if (typeof locales === "string") return boundedTag(locales);
  if (locales === null || (typeof locales !== "object" && typeof locales !== "function")) return locales;
  if (isLocale(locales)) return locales;
  const list =
    isPlainArray(locales) && locales.length <= MAX_LOCALES
      ? locales
      : copyArrayLike(locales, "Intl's list of locales", MAX_LOCALES, true);
  const checked: unknown[] = [];
  let count = 0;
  for (let i = 0; i < list.length; i++) {
    if (i in list) append(checked, count++, boundedTagOrLocale(list[i]));
  }
  return checked;
}

/** Intl's constructors: each takes its locales first, and so does its `supportedLocalesOf`. */
const INTL_CONSTRUCTORS = [
  "Collator",
  "DateTimeFormat",
  "DisplayNames",
  "DurationFormat",
  "ListFormat",
  "NumberFormat",
  "PluralRules",
  "RelativeTimeFormat",
  "Segmenter",
] as const;

/**
 * The `toLocale...` methods, and where each takes its locales (`localeCompare`'s are bounded with
 * its strings, in text-bounds.ts).
 */
const LOCALE_METHODS: [object, string, number][] = [
  [String.prototype, "toLocaleLowerCase", 0],
  [String.prototype, "toLocaleUpperCase", 0],
  [Number.prototype, "toLocaleString", 0],
  [BigInt.prototype, "toLocaleString", 0],
  [Date.prototype, "toLocaleString", 0],
  [Date.prototype, "toLocaleDateString", 0],
  [Date.prototype, "toLocaleTimeString", 0],
];

/** Replaces `holder[name]` by a method that bounds its argument at `position` first. */
function boundArgument(holder: object, name: string, position: number): void {
  replace(
    holder,
    name,
    (original) =>
      ({
        m(this: unknown, ...args: unknown[]) {
          if (args.length > position) args[position] = boundedLocales(args[position]);
          return apply(original, this, args);
        },
      }).m,
  );
}

export function boundLocaleLists(): void {
  const intl = Intl as unknown as Record<string, unknown>;
  for (const name of INTL_CONSTRUCTORS) {
    if (typeof intl[name] !== "function") continue;
    const replacement = replaceConstructor(intl, name, (args) => {
      if (args.length > 0) args[0] = boundedLocales(args[0]);
      return args;
    });
    boundArgument(replacement, "supportedLocalesOf", 0);
  }
  boundArgument(intl, "getCanonicalLocales", 0);
  replaceConstructor(intl, "Locale", (args) => {
    if (args.length > 0) args[0] = boundedTagOrLocale(args[0]);
    return args;
  });
  replace(
    Intl.DisplayNames.prototype,
    "of",
    (original) =>
      ({
        m(this: unknown, code: unknown) {
          return apply(original, this, [boundedTag(code)]);
        },
      }).m,
  );
  for (const [holder, name, position] of LOCALE_METHODS) boundArgument(holder, name, position);
}
