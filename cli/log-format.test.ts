/**
 * The platform's own lines (what was done through the dashboard) read as such in `platform logs`:
 * `platform:dashboard`, a name no handler can have, so a capsule's query named `dashboard` cannot
 * write lines that pass for them.
 */
import { expect, it } from "vitest";
import { formatLogLine, parseLogLine } from "./log-format.js";

const line = {
  time: "2026-12-07T01:02:03.456Z",
  level: "info",
  handler: "dashboard",
  requestId: "r1",
  message: "dashboard: operator deleted messages row k1",
};

it("names the platform's own lines, and only those", () => {
  expect(formatLogLine(parseLogLine(JSON.stringify({ ...line, platform: true })).line)).toBe(
    "01:02:03.456 INFO  platform:dashboard [r1] dashboard: operator deleted messages row k1",
  );
  for (const forged of [line, { ...line, platform: "true" }, { ...line, platform: 1 }])
    expect(formatLogLine(parseLogLine(JSON.stringify(forged)).line)).toBe(
      "01:02:03.456 INFO  dashboard [r1] dashboard: operator deleted messages row k1",
    );
});
