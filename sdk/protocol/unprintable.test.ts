import { describe, expect, it } from "vitest";
import { printable, printableJson, UNPRINTABLE } from "./unprintable.js";

describe("text shown on a terminal", () => {
  it("shows control characters and reordering marks escaped, the rest as it is", () => {
    expect(printable("a\nb\u001b[2K\u009bc\u202ed é")).toBe("a\\nb\\u001b[2K\\u009bc\\u202ed é");
  });

  it("keeps JSON the same value, with nothing a terminal acts on left as it is", () => {
    const value = { type: "text/plain\u009b[2K", by: "\u202eevil", fine: "é\n" };
    const text = printableJson(value);
    expect(UNPRINTABLE.test(text)).toBe(false);
    expect(JSON.parse(text)).toEqual(value);
    expect(printableJson(undefined)).toBe("null");
  });
});
