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
  if (secrets.length === 0) return kept === text.length ? text : text.slice(0, kept);
  const longest = secrets.reduce((most, value) => Math.max(most, value.length), 0);
  const searched = text.length > kept + longest ? text.slice(0, kept + longest) : text;
  // hiddenUntil[i]: the end of the furthest-reaching occurrence that starts at i.
  const hiddenUntil = new Int32Array(kept);
  let found = false;
  for (const secret of secrets) {
    for (let at = searched.indexOf(secret); at !== -1 && at < kept; at = searched.indexOf(secret, at + 1)) {
      hiddenUntil[at] = Math.max(hiddenUntil[at] as number, at + secret.length);
      found = true;
    }
  }
  if (!found) return kept === text.length ? text : text.slice(0, kept);
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
  return out.length > maxChars ? out.slice(0, maxChars) : out;
}
