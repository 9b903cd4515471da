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

  it("hides what searching from every position hides, overlapping occurrences included", () => {
    // The reference: every occurrence, found by comparing at every position; occurrences that
    // overlap are hidden together, touching ones each on its own.
    const reference = (text: string, secrets: string[]) => {
      const until = new Array<number>(text.length).fill(0);
      for (const secret of secrets)
        for (let at = 0; at + secret.length <= text.length; at++)
          if (text.startsWith(secret, at)) until[at] = Math.max(until[at] as number, at + secret.length);
      let out = "";
      for (let i = 0; i < text.length; ) {
        let end = until[i] as number;
        if (end === 0) {
          out += text[i++];
          continue;
        }
        for (let j = i + 1; j < end; j++) end = Math.max(end, until[j] as number);
        out += "[redacted]";
        i = end;
      }
      return out;
    };
    const letters = "ab";
    const word = (length: number) =>
      Array.from({ length }, () => letters[Math.floor(Math.random() * letters.length)]).join("");
    for (let n = 0; n < 2000; n++) {
      const secrets = Array.from({ length: 1 + (n % 3) }, () => word(4 + (n % 4)));
      const text = word(n % 60);
      const env = Object.fromEntries(secrets.map((secret, i) => [`K${i}`, secret]));
      expect(redactSecrets(text, env), `${text} ${secrets}`).toBe(reference(text, secrets));
    }
  });

  it("finds overlapping occurrences in one pass: 100 values of 8,192 a's in a's (it took 1 s a message)", () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`K${i}`, "a".repeat(8192 - i)]));
    expect(redactSecrets("a".repeat(100_000), many, 4096)).toBe("[redacted]");
    expect(redactSecrets(`b${"a".repeat(20_000)}`, many, 4096)).toBe("b[redacted]");
  });
});
