import { cutCopy, ownCopy } from "../own-copy.js";

/** What an env value is replaced by in text the platform shows. */
const REDACTED = "[redacted]";
/** Env values shorter than this are left alone: they would hide ordinary words. */
const SHORTEST_REDACTED = 4;

/**
 * `text` without any of `env`'s values (of 4 characters or more), each occurrence replaced by
 * `[redacted]`, at most `maxChars` characters long.
 *
 * Tenants' text can be megabytes (an error message, a log line's fields), so only its first
 * `maxChars` characters and the longest value's length after them are searched: the work is
 * bounded whatever the text. The kept characters are counted in `text`, not in the result: were
 * they counted after replacing, a value cut in half by the end of the searched window could move
 * into the kept part once earlier values shrank to `[redacted]`, and half a secret would show.
 * Overlapping occurrences (of one value or of several) are hidden together.
 */
export function redactSecrets(
  text: string,
  env: Record<string, string>,
  maxChars = Number.POSITIVE_INFINITY,
): string {
  const secrets = Object.values(env).filter((value) => value.length >= SHORTEST_REDACTED);
  const kept = Math.min(text.length, maxChars);
  // What is kept is a copy when it is a cut: a cut keeps all of its text alive (see ownCopy).
  const whole = (): string => cutCopy(text, kept);
  if (secrets.length === 0) return whole();
  const longest = secrets.reduce((most, value) => Math.max(most, value.length), 0);
  const searched = text.length > kept + longest ? text.slice(0, kept + longest) : text;
  // hiddenUntil[i]: the end of the furthest-reaching occurrence that starts at i.
  const hiddenUntil = new Int32Array(kept);
  let found = false;
  for (const secret of secrets) {
    const first = searched.indexOf(secret);
    if (first === -1 || first >= kept) continue;
    found = true;
    for (const at of occurrences(searched, secret, first, kept, env))
      hiddenUntil[at] = Math.max(hiddenUntil[at] as number, at + secret.length);
  }
  if (!found) return whole();
  let out = "";
  let shownFrom = 0;
  let i = 0;
  while (i < kept) {
    let end = hiddenUntil[i] as number;
    if (end === 0) {
      i++;
      continue;
    }
    out += text.slice(shownFrom, i) + REDACTED;
    // Occurrences starting inside this one extend it.
    for (let j = i + 1; j < Math.min(end, kept); j++) end = Math.max(end, hiddenUntil[j] as number);
    i = end;
    shownFrom = end;
  }
  if (shownFrom < kept) out += text.slice(shownFrom, kept);
  // Cutting the result only takes characters away: a value hidden above stays hidden.
  return ownCopy(out.length > maxChars ? out.slice(0, maxChars) : out);
}

/** Each env object's secrets' failure tables (see {@link occurrences}), made once per deploy. */
const failureTables = new WeakMap<Record<string, string>, Map<string, Int32Array>>();

/**
 * The longest proper prefix of `pattern[0..i]` that is also its suffix, for each i (Knuth-Morris-
 * Pratt): with it, every occurrence is found in one pass over the text.
 */
function failureTable(pattern: string, env: Record<string, string>): Int32Array {
  let tables = failureTables.get(env);
  if (!tables) {
    tables = new Map();
    failureTables.set(env, tables);
  }
  let table = tables.get(pattern);
  if (table) return table;
  table = new Int32Array(pattern.length);
  for (let i = 1, k = 0; i < pattern.length; i++) {
    while (k > 0 && pattern.charCodeAt(i) !== pattern.charCodeAt(k)) k = table[k - 1] as number;
    if (pattern.charCodeAt(i) === pattern.charCodeAt(k)) k++;
    table[i] = k;
  }
  tables.set(pattern, table);
  return table;
}

/**
 * Where `pattern` starts in `text`, from `from` (an occurrence) on, at positions before `before`,
 * overlapping ones included, in time linear in the text: searching again one character after each
 * occurrence compared the whole pattern at every position of a text of one repeated character
 * (100 values of 8,192 `a`s held the main thread 1 s per error message).
 */
function* occurrences(
  text: string,
  pattern: string,
  from: number,
  before: number,
  env: Record<string, string>,
): Generator<number> {
  const table = failureTable(pattern, env);
  // An occurrence starting before `before` ends before this.
  const end = Math.min(text.length, before + pattern.length - 1);
  for (let i = from, k = 0; i < end; i++) {
    while (k > 0 && text.charCodeAt(i) !== pattern.charCodeAt(k)) k = table[k - 1] as number;
    if (text.charCodeAt(i) === pattern.charCodeAt(k)) k++;
    if (k === pattern.length) {
      yield i - pattern.length + 1;
      k = table[k - 1] as number;
    }
  }
}
