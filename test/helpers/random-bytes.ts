import { randomBytes } from "node:crypto";

/**
 * `n` random bytes that storage accepts: the first is 0, so they never start like a blocked type
 * (`MZ`, `#!`, ELF, Mach-O, Java class, `<` of a markup document). Plain random bytes do, now and
 * then (1 in 65,536 start with `MZ`), and a test uploading dozens of them failed with 415.
 */
export function storableRandomBytes(n: number): Buffer {
  const bytes = randomBytes(n);
  if (n > 0) bytes[0] = 0;
  return bytes;
}
