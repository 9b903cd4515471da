import { expect, it } from "vitest";
import { normaliseEmail } from "./sessions.js";

it("lower-cases and composes an address, so one mailbox is one account however it is typed", () => {
  expect(normaliseEmail("  Kate@Corp.COM ")).toBe("kate@corp.com");
  // "josé" typed decomposed (e + combining acute) is the composed address.
  expect(normaliseEmail("jose\u0301@example.com")).toBe("jos\u00e9@example.com");
  expect(normaliseEmail("\u0939\u093f\u0928\u094d\u0926\u0940@example.com")).toBe(
    "\u0939\u093f\u0928\u094d\u0926\u0940@example.com",
  );
  // Dotted capital I lower-cases to i and a combining dot: still an address.
  expect(normaliseEmail("\u0130nfo@example.com")).toBe("i\u0307nfo@example.com");
});

it("keeps the form of every address versions before accepted: an account's id is derived from it", () => {
  // Greek with oxia, a Devanagari nukta letter, a compatibility ideograph: NFC would rewrite them.
  for (const local of ["\u1f71bc", "\u0958ab", "\uf900x"])
    expect(normaliseEmail(`${local}@example.com`)).toBe(`${local}@example.com`);
});

it("refuses a character standing for a plain letter: it would sign in as another mailbox's account", () => {
  // The Kelvin sign lower-cases to k: "\u212Aate" would be kate's account.
  expect(() => normaliseEmail("\u212Aate@corp.com")).toThrow(/stands for a plain letter/);
  expect(() => normaliseEmail("\u212Bngstrom@corp.com")).not.toThrow();
});

it("refuses what is not one plain mailbox", () => {
  for (const bad of ['"x" <a@b.c>', "a@b.c,d@e.f", "no-at-sign", "a@", "@b.c", 42, null])
    expect(() => normaliseEmail(bad), String(bad)).toThrow(/valid email address/);
});

it("is its own fixed point: a normalised address normalises to itself, letters that compose again included", () => {
  // Composed, then lower-cased: the lower case of U+0386 is U+03AC, which composes with the iota
  // below into U+1FB4. One pass left U+03AC U+0345, a second gave U+1FB4: a code mailed to the
  // first spelling signed in the account of the second.
  const typed = "\u0386\u0345x@example.com";
  expect(normaliseEmail(typed)).toBe("\u1fb4x@example.com");
  expect(normaliseEmail(normaliseEmail(typed))).toBe(normaliseEmail(typed));
  // Every letter with a mark and an iota below, capital and small, typed decomposed and composed.
  for (let code = 0x370; code <= 0x3ff; code++)
    for (const marks of ["\u0345", "\u0301\u0345", "\u0313\u0345", "\u0342\u0345"]) {
      const address = `${String.fromCodePoint(code)}${marks}x@example.com`;
      let once: string;
      try {
        once = normaliseEmail(address);
      } catch {
        continue;
      }
      expect(normaliseEmail(once), address).toBe(once);
    }
});
