/**
 * `text` as a string of its own. A cut of a longer string (`slice`) is, in V8, a view that keeps
 * the whole of it alive: a 4 KiB cut of an 8 MiB log message kept 8 MiB in the host's heap for as
 * long as the line was, and a tenant logging such lines ran the host out of memory in 15 s.
 * Copied through bytes (UTF-16, so lone surrogates stay as they are).
 */
export function ownCopy(text: string): string {
  return text.length < 13 ? text : Buffer.from(text, "utf16le").toString("utf16le");
}

/** `text`'s first `most` characters: `text` itself when it has no more, else a copy of the cut (see {@link ownCopy}). */
export function cutCopy(text: string, most: number): string {
  return text.length <= most ? text : ownCopy(text.slice(0, most));
}
