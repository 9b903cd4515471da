import picocolors from "picocolors";
import { describe, expect, it } from "vitest";
import { formatTable } from "./table.js";

describe("formatTable", () => {
  it("aligns columns by terminal width: CJK and emoji take two cells, combining marks none", () => {
    const table = formatTable({
      head: ["KEY", "SIZE", "TYPE"],
      rows: [
        ["日本語.png", "1.0 KiB", "image/png"],
        ["a📷b", "12 B", "image/jpeg"],
        ["cafe\u0301.txt", "300 B", "text/plain"],
      ],
      align: ["left", "right", "left"],
    });
    expect(table.split("\n")).toEqual([
      "KEY            SIZE  TYPE",
      "日本語.png  1.0 KiB  image/png",
      "a📷b           12 B  image/jpeg",
      "cafe\u0301.txt      300 B  text/plain",
    ]);
  });

  it("gives colour escape codes no width, indents, and leaves no trailing spaces", () => {
    const c = picocolors.createColors(true);
    const table = formatTable({
      head: ["ROWS", "RESULT"].map((h) => c.dim(h)),
      rows: [
        ["100", c.green("ok")],
        ["6,000", c.red("rowsRead limit")],
      ],
      align: ["right", "left"],
      indent: 2,
    });
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing the escape codes on purpose.
    const plain = table.replace(/\u001b\[\d+m/g, "");
    const lines = plain.split("\n");
    expect(lines).toEqual(["   ROWS  RESULT", "    100  ok", "  6,000  rowsRead limit"]);
    expect(table).toContain("\u001b[32mok\u001b[39m");
    for (const line of lines) expect(line).toBe(line.trimEnd());
  });
});
