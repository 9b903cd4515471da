import { describe, expect, it } from "vitest";
import { redactSecrets } from "./redact.js";

const env = { KEY: "sk-live-0123456789abcdef", SHORT: "abc", TOKEN: "tok_ZZZZ" };

describe("redactSecrets", () => {
  it("replaces every env value of 4 characters or more", () => {
    expect(redactSecrets("a sk-live-0123456789abcdef b tok_ZZZZ c abc", env)).toBe(
      "a [redacted] b [redacted] c abc",
    );
    expect(redactSecrets("nothing here", env)).toBe("nothing here");
    expect(redactSecrets("tok_ZZZZtok_ZZZZ", env)).toBe("[redacted][redacted]");
  });

  it("hides overlapping values together", () => {
    expect(redactSecrets("xx-abcdefgh-yy", { A: "abcdef", B: "defgh" })).toBe("xx-[redacted]-yy");
    expect(redactSecrets("aaaaaa", { A: "aaaa" })).toBe("[redacted]");
  });

  it("keeps at most maxChars characters of the text, counted before replacing", () => {
    expect(redactSecrets("0123456789", {}, 4)).toBe("0123");
    expect(redactSecrets("tok_ZZZZ 0123456789", env, 12)).toBe("[redacted] 0");
  });

  it("never shows part of a value cut by the end of the kept text", () => {
    // The value starts 4 characters before the cut: hidden whole.
    expect(redactSecrets(`${"x".repeat(96)}${env.KEY}tail`, env, 100)).toBe(`${"x".repeat(96)}[red`);
    // Earlier values shrink to [redacted]; a value that started past the cut must not move in.
    const long = "L".repeat(200);
    const text = `${long}${"y".repeat(50)}${env.KEY}`;
    const out = redactSecrets(text, { LONG: long, KEY: env.KEY }, 260);
    expect(out).toBe(`[redacted]${"y".repeat(50)}[redacted]`.slice(0, 260));
    const cutBefore = redactSecrets(text, { LONG: long, KEY: env.KEY }, 250);
    expect(cutBefore).toBe(`[redacted]${"y".repeat(50)}`);
    expect(cutBefore).not.toContain("sk-");
  });

  it("searches only the kept characters and the longest value's length after them", () => {
    const secret = "S".repeat(8192);
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`K${i}`, `${i}-${secret}`]));
    const text = `${"m".repeat(8 * 1024 * 1024)}`;
    const out = redactSecrets(`${"99-"}${secret}${text}`, many, 4096);
    expect(out).toBe("[redacted]");
  });
});
