import { describe, expect, it } from "vitest";
import { printable, printableJson, UNPRINTABLE } from "./unprintable.js";

describe("text shown on a terminal", () => {
  it("shows control characters and reordering marks escaped, the rest as it is", () => {
    expect(printable("a\nb\u001b[2K\u009bc\u202ed é")).toBe("a\\nb\\u001b[2K\\u009bc\\u202ed é");
  });

  it("shows the marks that hide text or reorder it escaped, and keeps the joiners emoji need", () => {
    expect(printable("a\u061cb\u200bc\u2060d\ufeffe\u206af")).toBe(
      "a\\u061cb\\u200bc\\u2060d\\ufeffe\\u206af",
    );
    const family = "\u{1f468}\u200d\u{1f469}\u200d\u{1f467}";
    expect(printable(family)).toBe(family);
    expect(UNPRINTABLE.test("\u200c")).toBe(false);
    expect(printableJson({ name: "x\u200by" })).toBe('{"name":"x\\u200by"}');
  });

  it("keeps JSON the same value, with nothing a terminal acts on left as it is", () => {
    const value = { type: "text/plain\u009b[2K", by: "\u202eevil", fine: "é\n" };
    const text = printableJson(value);
    expect(UNPRINTABLE.test(text)).toBe(false);
    expect(JSON.parse(text)).toEqual(value);
    expect(printableJson(undefined)).toBe("null");
  });
});
