import { describe, expect, it } from "vitest";
import { colorEnabled, noColors } from "./colors.js";
import { formatSignInCode } from "./commands/dev.js";
import { formatLogLine } from "./commands/logs.js";
import { plural } from "./output.js";

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
