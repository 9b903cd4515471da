/** A bundle hashed a slice per turn is the same hash as the bundle hashed at once, whatever it holds. */
import { createHash } from "node:crypto";
import { expect, it } from "vitest";
import { bundleHash } from "./bundle-hash.js";

const whole = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

it("hashes in slices to the hash of the whole text, with surrogate pairs across a slice's end", async () => {
  const slice = 1024 * 1024;
  const texts = [
    "",
    "export default 1;",
    "a".repeat(slice * 2 + 7),
    // A pair whose high half is the last unit of the first slice, and one across the second.
    `${"a".repeat(slice - 1)}😀${"b".repeat(slice - 2)}𝄞 tail`,
    "é€😀".repeat(slice),
  ];
  for (const text of texts) expect(await bundleHash(text)).toBe(whole(text));
});

it("refuses a bundle holding a lone surrogate: it hashed as U+FFFD, the same as another bundle", async () => {
  const slice = 1024 * 1024;
  // Two different bundles, one hash: the artifact stored first under it served both.
  expect(whole("x = '\ud800';")).toBe(whole("x = '\ufffd';"));
  expect(await bundleHash("x = '\ufffd';")).toBe(whole("x = '\ufffd';"));
  for (const text of [
    "x = '\ud800';",
    "x = '\udc00';",
    "x = '\ud800",
    `${"a".repeat(slice - 1)}\ud800${"c".repeat(10)}`,
    `${"a".repeat(slice)}\udc00`,
  ])
    await expect(bundleHash(text)).rejects.toMatchObject({ code: "bad_request" });
});
