/**
 * The Unicode marks that reorder text (the Arabic letter mark U+061C too) or hide it (zero-width
 * space, word joiner, byte order mark, the deprecated format controls), as a character class's
 * body. The zero-width joiner and non-joiner stay: emoji sequences and Persian words need them.
 */
const HIDING_MARKS = "\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060\\u2066-\\u206f\\ufeff";

/**
 * Control characters (C0 and C1, so the one-byte escape prefix U+009B too), and the Unicode marks
 * that reorder or hide text: what no text a terminal or a page shows may carry as it is. A log
 * line's newline forged a whole line of `platform logs`, and escape sequences in a log message or
 * a stored file's type reached the developer's terminal (colours, its title, its clipboard).
 */
export const UNPRINTABLE = new RegExp(`[\\p{Cc}${HIDING_MARKS}]`, "u");
const EVERY_UNPRINTABLE = new RegExp(UNPRINTABLE.source, "gu");
/** What JSON.stringify leaves as it is of {@link UNPRINTABLE} (it escapes U+0000 to U+001F itself). */
const UNPRINTABLE_IN_JSON = new RegExp(`[\\u007f-\\u009f${HIDING_MARKS}]`, "g");

const escaped = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** `text` with every {@link UNPRINTABLE} character shown as its escape (`\n`, `\u001b`). */
export function printable(text: string): string {
  return text.replace(EVERY_UNPRINTABLE, (char) => (char === "\n" ? "\\n" : escaped(char)));
}

/**
 * `value` as JSON text with no {@link UNPRINTABLE} character left as it is (the same JSON value),
 * indented by `space` as `JSON.stringify` does.
 */
export function printableJson(value: unknown, space?: number): string {
  return printableJsonText(JSON.stringify(value, null, space) ?? "null");
}

/**
 * JSON text (as `JSON.stringify` or pino writes it) with the {@link UNPRINTABLE} characters JSON
 * leaves as they are escaped: the same JSON value, safe to print.
 */
export function printableJsonText(json: string): string {
  return json.replace(UNPRINTABLE_IN_JSON, escaped);
}
