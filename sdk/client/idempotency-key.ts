/**
 * A new random idempotency key for one mutation: 128 bits as 32 hex digits. `getRandomValues`,
 * not `randomUUID`: browsers offer the latter only on HTTPS pages, and apps run on plain HTTP too.
 */
export function newIdempotencyKey(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  let key = "";
  for (const byte of bytes) key += byte.toString(16).padStart(2, "0");
  return key;
}
