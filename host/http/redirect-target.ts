import { LIMITS } from "../../sdk/protocol/index.js";

/** ASCII tabs and newlines, which browsers remove anywhere in a URL before parsing it. */
const TAB_OR_NEWLINE = /[\t\n\r]/g;
/** A path on this site: one `/`, then nothing or a character that is neither `/` nor `\`. */
const SAME_SITE_PATH = /^\/(?:[^/\\]|$)/;

/** `text` without leading and trailing C0 controls and spaces, as browsers trim URLs. */
function trimControls(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) <= 0x20) start++;
  while (end > start && text.charCodeAt(end - 1) <= 0x20) end--;
  return text.slice(start, end);
}

/** Whether `text` holds a control character (a Location header cannot carry one safely). */
function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * Where to send a browser after sign-in: `next` as a browser would read it (tabs and newlines
 * removed, edges trimmed) when it is a path on this site, both as written and percent-decoded, of
 * at most {@link LIMITS.redirectPathChars}; else `fallback`. `//evil`, `/\evil`, `/%5Cevil`,
 * `/\t/evil`, `https:evil` and relative paths all fall back (browsers read `\` as `/`, so `/\evil`
 * leaves the site), and so does a path long enough to make a response head a proxy refuses.
 */
export function sameSitePath(next: string | null | undefined, fallback = "/"): string {
  if (!next || next.length > LIMITS.redirectPathChars) return fallback;
  const path = trimControls(next.replace(TAB_OR_NEWLINE, ""));
  if (!SAME_SITE_PATH.test(path) || hasControl(path)) return fallback;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path).replace(TAB_OR_NEWLINE, "");
  } catch {
    return fallback;
  }
  return SAME_SITE_PATH.test(decoded) ? path : fallback;
}
