/**
 * How the host hands a long string into an isolate. isolated-vm makes every string of 1 KB or more
 * that crosses in as it is an external string: V8 places those in old space and weighs only their
 * small headers, so it sees no reason to collect them, while isolated-vm counts their bytes as the
 * isolate's memory. A deployment serving pages of rows under load piled up 100 MB of them within
 * seconds: its heap was weighed as near its limit (breached slots), its process held that much
 * more memory, and isolated-vm at last ran V8's low-memory collection inside a call, 30-80 ms on
 * the host's main thread when the call ran inline. Alone in an array, a string crosses serialized
 * (`copy: true`) and arrives as an ordinary young string, collected with the rest of the garbage:
 * about as fast up to tens of kilobytes, and about 0.8 µs per KB more beyond.
 */
export type CrossingText = string | [string];

/** Strings this long or longer are wrapped: 1 KB of two-byte characters. */
const WRAP_FROM_CHARS = 512;

/** `text` as the host hands it in: alone in an array when it is long. */
export function wrapText(text: string): CrossingText {
  return text.length < WRAP_FROM_CHARS ? text : [text];
}

/** True when `values` hold a wrapped text: they must then cross with `copy: true`. */
export function anyWrapped(values: readonly unknown[]): boolean {
  for (const value of values) if (typeof value === "object" && value !== null) return true;
  return false;
}

/** The string the host handed in, wrapped or not (inside the isolate). */
export function unwrapText(value: unknown): string {
  return typeof value === "string" ? value : (value as [string])[0];
}
