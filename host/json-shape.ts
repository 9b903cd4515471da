/** Bounds on JSON a tenant or its users send the host to parse: its main thread pays for every object and member. */
import { PlatformError } from "../sdk/values/index.js";

/**
 * True when `json` opens more than `most` objects and arrays (`{` and `[`, in strings too, which
 * only ever overcounts). Found with native searches, stopping at the limit: bounded work, however
 * the text is made.
 */
export function opensMoreThan(json: string, most: number): boolean {
  let opened = 0;
  for (const bracket of ["{", "["]) {
    for (let at = json.indexOf(bracket); at !== -1; at = json.indexOf(bracket, at + 1))
      if (++opened > most) return true;
  }
  return false;
}

/**
 * True when `json` holds more than `most` object members (its `:` characters outside strings).
 * Parsing an object costs the host's main thread far more per member than its size suggests
 * (about 0.45 ms per thousand distinct keys: 7 MB of one flat object held it for 0.6 s), so a
 * size limit alone does not bound it.
 */
export function membersMoreThan(json: string, most: number): boolean {
  return charsOutsideStringsMoreThan(json, most, 58, 58);
}

/**
 * True when `json` opens more than `most` objects and arrays outside its strings: exact, unlike
 * {@link opensMoreThan}, for JSON whose strings may hold any number of brackets (a row).
 */
export function containersMoreThan(json: string, most: number): boolean {
  return charsOutsideStringsMoreThan(json, most, 123, 91);
}

/**
 * True when more than `most` characters outside `json`'s strings are `first` or `second` (char
 * codes). A string whose end has no backslash before it is skipped with one native search; one
 * with escapes is read a character at a time (skipping from quote to quote, a string of 4 million
 * escaped quotes took 44 ms, now 6). The rest is read once, stopping at the limit.
 */
export function charsOutsideStringsMoreThan(
  json: string,
  most: number,
  first: number,
  second: number,
): boolean {
  let seen = 0;
  const length = json.length;
  for (let at = 0; at < length; at++) {
    const code = json.charCodeAt(at);
    if (code === 34) {
      const close = json.indexOf('"', at + 1);
      if (close === -1) return false;
      if (json.charCodeAt(close - 1) !== 92) {
        at = close;
        continue;
      }
      let inside = at + 1;
      for (; inside < length; inside++) {
        const char = json.charCodeAt(inside);
        if (char === 92) inside++;
        else if (char === 34) break;
      }
      if (inside >= length) return false;
      at = inside;
      continue;
    }
    if ((code === first || code === second) && ++seen > most) return true;
  }
  return false;
}

/**
 * Throws `code` naming `what` when `json` opens more than `containers` objects and arrays or holds
 * more than `members` object members: the JSON a tenant or its users made, checked before the
 * host's main thread parses it. Brackets in strings count too unless `exact` (then the text is
 * read once more when they would pass the limit): a deploy body's bundle is one string, and a
 * 9 MB bundle already held 53,690 of them.
 */
export function checkJsonShape(
  json: string,
  what: string,
  containers: number,
  members: number,
  code: "bad_request" | "handler_error" = "bad_request",
  exact = false,
): void {
  // Text shorter than a limit cannot pass it.
  if (
    json.length > containers &&
    opensMoreThan(json, containers) &&
    (!exact || containersMoreThan(json, containers))
  )
    throw new PlatformError(
      code,
      `${what} holds more than ${containers} objects and arrays ("{" and "[" characters${exact ? " outside strings" : ", in strings too"}). Split it, or pass ids, not data.`,
    );
  if (json.length > members && membersMoreThan(json, members))
    throw new PlatformError(
      code,
      `${what} holds more than ${members} object members. Split it, or keep large maps as arrays or text.`,
    );
}
