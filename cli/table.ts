import Table from "cli-table3";

/** What {@link formatTable} lays out. */
export interface TableSpec {
  /** Column titles; they may carry colour, which takes no width. */
  head: string[];
  /** One line each; cells may carry colour. */
  rows: string[][];
  /** Per column; numbers read best right-aligned. Default: left. */
  align?: Array<"left" | "right">;
  /** Spaces before every line (a table under a heading). */
  indent?: number;
}

/** No borders, two spaces between columns: the look of `docker ps`, `kubectl get` and `npm ls`. */
const PLAIN = {
  top: "",
  "top-mid": "",
  "top-left": "",
  "top-right": "",
  bottom: "",
  "bottom-mid": "",
  "bottom-left": "",
  "bottom-right": "",
  left: "",
  "left-mid": "",
  mid: "",
  "mid-mid": "",
  right: "",
  "right-mid": "",
  middle: "  ",
};

/**
 * Lays out a table for a terminal. Column widths are measured in terminal cells by cli-table3
 * (through string-width), so wide characters (CJK, emoji) and colour escape codes keep the columns
 * aligned, which `padEnd` on string length does not. Lines carry no trailing spaces.
 *
 * @example
 * formatTable({ head: ["KEY", "SIZE"], rows: [["a.png", "1.2 KiB"]], align: ["left", "right"] });
 * // "KEY       SIZE\na.png  1.2 KiB"
 */
export function formatTable(spec: TableSpec): string {
  const table = new Table({
    head: spec.head,
    chars: PLAIN,
    // No styling of its own (its colours ignore NO_COLOR); callers colour the cells.
    style: { "padding-left": 0, "padding-right": 0, head: [], border: [], compact: true },
    colAligns: spec.align ?? [],
  });
  table.push(...spec.rows);
  const indent = " ".repeat(spec.indent ?? 0);
  return table
    .toString()
    .split("\n")
    .map((line) => `${indent}${line.trimEnd()}`)
    .join("\n");
}
