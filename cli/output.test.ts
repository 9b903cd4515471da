import { describe, expect, it } from "vitest";
import { PlatformError } from "../sdk/values/index.js";
import { colorEnabled, noColors } from "./colors.js";
import { formatSignInCode } from "./commands/dev.js";
import { formatCallSummary, formatLogLine } from "./log-format.js";
import { plural, reportError } from "./output.js";

describe("plural", () => {
  it("puts the noun in the number of its count, grouping thousands", () => {
    expect(plural(1, "file")).toBe("1 file");
    expect(plural(0, "file")).toBe("0 files");
    expect(plural(2, "file")).toBe("2 files");
    expect(plural(2500, "row")).toBe("2,500 rows");
    expect(plural(1, "index", "indexes")).toBe("1 index");
    expect(plural(3, "index", "indexes")).toBe("3 indexes");
    expect(plural(1, "file was", "files were")).toBe("1 file was");
  });
});

describe("colour", () => {
  const tty = { isTTY: true };
  const pipe = { isTTY: false };

  it("is on for terminals only, never with NO_COLOR, and forced with FORCE_COLOR", () => {
    expect(colorEnabled(tty, {})).toBe(true);
    expect(colorEnabled(pipe, {})).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: "1" })).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: "" })).toBe(true);
    expect(colorEnabled(tty, { TERM: "dumb" })).toBe(false);
    expect(colorEnabled(pipe, { FORCE_COLOR: "1" })).toBe(true);
    expect(colorEnabled(tty, { FORCE_COLOR: "0" })).toBe(false);
    expect(colorEnabled(pipe, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(false);
  });

  it("leaves text without escape codes when off", () => {
    const line = formatLogLine(
      {
        time: "2026-01-02T03:04:05.678Z",
        level: "warn",
        handler: "add",
        requestId: "r1",
        message: "careful",
      },
      noColors,
    );
    expect(line).toBe("03:04:05.678 WARN  add [r1] careful");
  });
});

/** A call's budget figures, for the lines below. */
const usage = {
  rowsReturned: 0,
  rowsRead: 1,
  bytesRead: 0,
  rangesRead: 1,
  indexScans: 1,
  writes: 0,
  cpuMs: 1,
  wallMs: 3.04,
};

describe("a failed call's lines", () => {
  const call = {
    kind: "mutation",
    name: "toggle",
    outcome: "handler_error",
    usage,
    error: { message: "Uncaught Error: No todo", stack: "    at toggle (server/index.ts:19:24)" },
  };

  it("show the message after the outcome and the stack below, in platform logs", () => {
    const line = formatLogLine({
      time: "2026-01-02T03:04:05.678Z",
      level: "warn",
      handler: "toggle",
      requestId: "r1",
      message: "mutation toggle handler_error",
      call,
    });
    expect(line.split("\n")).toEqual([
      expect.stringMatching(
        /^03:04:05.678 WARN {2}toggle \[r1\] mutation toggle handler_error: Uncaught Error: No todo · 3.0 ms wall/,
      ),
      "    at toggle (server/index.ts:19:24)",
    ]);
  });

  it("and in platform dev's summary, which is one line for a call that succeeded", () => {
    expect(formatCallSummary("2026-01-02T03:04:05.678Z", call)).toBe(
      "03:04:05.678 mutation toggle handler_error 3.0 ms: Uncaught Error: No todo\n    at toggle (server/index.ts:19:24)",
    );
    expect(
      formatCallSummary("2026-01-02T03:04:05.678Z", { kind: "query", name: "list", outcome: "ok", usage }),
    ).toBe("03:04:05.678 query list ok 3.0 ms");
  });
});

describe("text of the capsule's in a log line", () => {
  it("cannot start a line of its own or reach the terminal as control codes", () => {
    // A handler logging `hello ${name}` with a name an app user chose forged a whole line, in colour.
    const forged =
      "bob\n09:00:00.000 ERROR admin [mx1] credentials rotated\u001b[31m RED\u001b]0;title\u0007\u202e";
    const line = formatLogLine({
      time: "2026-01-02T03:04:05.678Z",
      level: "info",
      handler: "greet",
      requestId: "r1",
      message: `hello ${forged}`,
      fields: { name: forged },
    });
    expect(line.split("\n")).toHaveLength(1);
    expect(line).not.toMatch(/[\p{Cc}\u202e]/u);
    expect(line).toContain(
      "hello bob\\n09:00:00.000 ERROR admin [mx1] credentials rotated\\u001b[31m RED\\u001b]0;title\\u0007\\u202e",
    );
    const summary = formatCallSummary("2026-01-02T03:04:05.678Z", {
      kind: "mutation",
      name: "fail",
      outcome: "handler_error",
      usage,
      error: { message: `Uncaught Error: no user ${forged}`, stack: "    at fail (server/index.ts:3:9)" },
    });
    expect(summary.split("\n")).toEqual([
      expect.stringContaining("no user bob\\n09:00"),
      "    at fail (server/index.ts:3:9)",
    ]);
    expect(summary).not.toContain("\u001b");
    // A stack that begins with the message, its lines the handler's: none flush left.
    const stacked = formatCallSummary("2026-01-02T03:04:05.678Z", {
      kind: "mutation",
      name: "fail",
      outcome: "handler_error",
      usage,
      error: {
        message: "Uncaught Error: x",
        stack: `Error: x\n09:00:00.000 ERROR admin [mx1] rotated\n    at fail (server/index.ts:3:9)`,
      },
    });
    expect(stacked.split("\n").slice(1)).toEqual([
      "  Error: x",
      "  09:00:00.000 ERROR admin [mx1] rotated",
      "    at fail (server/index.ts:3:9)",
    ]);
  });
});

describe("platform dev's sign-in code line", () => {
  it("names the address, the code and how long it lasts", () => {
    const now = 1_000_000;
    expect(
      formatSignInCode(
        { email: "ada@example.com", code: "012345", expiresAt: now + 10 * 60_000 },
        undefined,
        now,
      ),
    ).toBe("sign-in code for ada@example.com: 012345 (expires in 10 minutes)");
    expect(
      formatSignInCode({ email: "a@b.c", code: "999999", expiresAt: now + 60_000 }, undefined, now),
    ).toBe("sign-in code for a@b.c: 999999 (expires in 1 minute)");
  });
});

/** What `print` writes on stderr. */
function stderrOf(print: () => void): string {
  const chunks: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => {
    chunks.push(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    print();
  } finally {
    process.stderr.write = write;
  }
  return chunks.join("");
}

describe("reportError", () => {
  it("shows a message's escape codes as text, keeping its lines (found by review)", () => {
    let code = 0;
    const text = stderrOf(() => {
      code = reportError(
        new PlatformError(
          "bad_request",
          "Invalid archive: \u001b]52;c;ZWNobw==\u0007\u001b[2K\rx\u009b1m is bad.\nSecond line.",
        ),
      );
    });
    expect(code).toBe(1);
    for (const raw of ["\u001b", "\u0007", "\u009b", "\r"]) expect(text).not.toContain(raw);
    expect(text).toContain("\\u001b]52;c;ZWNobw==\\u0007\\u001b[2K");
    expect(text).toContain(" is bad.\n  Second line.\n");
  });

  it("indents a message's lines after the first, so none passes for the CLI's own", () => {
    const text = stderrOf(() =>
      reportError(
        new PlatformError("unavailable", "Try later.\ndeployed app v2 at https://evil.example\n\u200b\ufeff"),
      ),
    );
    const lines = text.split("\n");
    expect(lines[0]).toMatch(/^error: unavailable: Try later\.$/);
    expect(lines[1]).toBe("  deployed app v2 at https://evil.example");
    expect(lines[2]).toBe("  \\u200b\\ufeff");
  });

  it("indents the stack it shows with --verbose whole, the message's lines in it too (found by review)", () => {
    const text = stderrOf(() =>
      reportError(new PlatformError("unavailable", "Try later.\ndeployed app v2"), true),
    );
    const lines = text.split("\n").filter((line) => line !== "");
    expect(lines[0]).toMatch(/^error: /);
    for (const line of lines.slice(1)) expect(line).toMatch(/^ {2}/);
  });
});
