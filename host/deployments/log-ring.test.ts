import { describe, expect, it } from "vitest";
import { UNPRINTABLE } from "../../sdk/protocol/index.js";
import { LogHub } from "./log-hub.js";
import { type CallLine, callLogLine, formatRequestId, type LogLine } from "./log-line.js";
import { LogRing } from "./log-ring.js";

function call(n: number, outcome = "ok"): CallLine {
  return {
    timeMs: 1_700_000_000_000 + n,
    handler: `list${n % 3}`,
    requestStartedMs: 1_700_000_000_000 + n - 1,
    requestSeq: n,
    call: {
      kind: n % 2 ? "query" : "mutation",
      name: `list${n % 3}`,
      outcome,
      usage: {
        rowsReturned: n,
        rowsRead: n * 2,
        bytesRead: n * 100,
        rangesRead: 1,
        indexScans: 1,
        writes: n % 2,
        cpuMs: n / 8,
        wallMs: n / 4 + 0.125,
      },
    },
  };
}

function own(n: number): LogLine {
  return {
    time: new Date(1_700_000_000_000 + n).toISOString(),
    level: "info",
    deployment: "d1",
    handler: "list0",
    requestId: `r${n}`,
    message: `line ${n}`,
    fields: { n },
  };
}

/** Writes line `n`: a handler's own line every `ownEvery`, else a call; returns what should read back. */
function pushLine(ring: LogRing, n: number, ownEvery: number, outcome = "ok"): LogLine {
  if (n % ownEvery === 0) {
    ring.push(own(n));
    return own(n);
  }
  ring.pushCall(call(n, outcome));
  return callLogLine("d1", call(n, outcome));
}

describe("LogRing", () => {
  it("gives back every kept line, oldest first, calls exactly as their lines", () => {
    const ring = new LogRing("d1", 100);
    const expected: LogLine[] = [];
    for (let n = 0; n < 40; n++) expected.push(pushLine(ring, n, 5, n % 7 ? "ok" : "timeout"));
    expect(ring.recent()).toEqual(expected);
    expect(ring.recent()[1]).toMatchObject({
      level: "info",
      requestId: formatRequestId(1_700_000_000_000, 1),
      message: "query list1 ok",
      call: { usage: { rowsReturned: 1, cpuMs: 0.125, wallMs: 0.375 } },
    });
    expect(ring.recent()[7]).toMatchObject({ level: "warn", message: "query list1 timeout" });
  });

  it("keeps only the last `capacity` lines, across growth and wrap-around", () => {
    const ring = new LogRing("d1", 50);
    const all: LogLine[] = [];
    for (let n = 0; n < 173; n++) {
      all.push(pushLine(ring, n, 11));
      expect(ring.recent()).toEqual(all.slice(-50));
    }
  });

  it("drops its oldest lines while their text is over its maximum, calls and lines alike", () => {
    const ring = new LogRing("d1", 100, 10_000);
    const big = (n: number): LogLine => ({ ...own(n), message: "m".repeat(3000), fields: {} });
    ring.pushCall(call(0));
    ring.push(big(1));
    ring.push(big(2));
    ring.push(big(3));
    expect(ring.recent().map((line) => line.requestId)).toEqual([
      formatRequestId(call(0).requestStartedMs, 0),
      "r1",
      "r2",
      "r3",
    ]);
    ring.push(big(4)); // 12,000 characters: the oldest lines go until it fits
    expect(ring.recent().map((line) => line.requestId)).toEqual(["r2", "r3", "r4"]);
    // One line over the maximum alone is still kept (lines are cut to their own limits first).
    ring.push({ ...own(5), message: "m".repeat(20_000), fields: {} });
    expect(ring.recent().map((line) => line.requestId)).toEqual(["r5"]);
    for (let n = 6; n < 200; n++) ring.pushCall(call(n));
    expect(ring.length).toBe(100);
    ring.push(big(300));
    expect(ring.length).toBe(100);
    expect(ring.recent().at(-1)?.requestId).toBe("r300");
  });

  it("is empty until written", () => {
    expect(new LogRing("d1", 10).recent()).toEqual([]);
  });
});

describe("LogHub", () => {
  it("keeps call lines and the handlers' own lines in order, and follows both", () => {
    const hub = new LogHub(false);
    const followed: LogLine[] = [];
    const sink = hub.sink("d1", "add", { startedMs: 1_700_000_000_000, seq: 7 }, { SECRET: "hunter22" });
    sink({ level: "info", message: "before hunter22" });
    const stop = hub.follow("d1", (line) => followed.push(line));
    hub.recordCall("d1", "add", { startedMs: 1_700_000_000_000, seq: 7 }, call(7).call);
    sink({ level: "warn", message: "after" });
    stop();
    hub.recordCall("d1", "add", { startedMs: 1_700_000_000_001, seq: 8 }, call(8).call);
    const recent = hub.recent("d1");
    expect(recent.map((line) => line.message)).toEqual([
      "before [redacted]",
      "query list1 ok",
      "after",
      "mutation list2 ok",
    ]);
    expect(recent.map((line) => line.requestId)).toEqual([
      "loyw3v28-7",
      "loyw3v28-7",
      "loyw3v28-7",
      "loyw3v29-8",
    ]);
    expect(followed).toEqual(recent.slice(1, 3));
    expect(hub.recent("other")).toEqual([]);
  });

  it("warns on a call above half of a budget, with the call's request id", () => {
    const hub = new LogHub(false);
    const heavy = call(3).call;
    heavy.usage.rowsRead = 4000;
    hub.recordCall("d1", "scan", { startedMs: 1_700_000_000_000, seq: 9 }, heavy);
    const [line, warning] = hub.recent("d1");
    expect(line).toMatchObject({ message: "query list0 ok", requestId: "loyw3v28-9" });
    expect(warning).toMatchObject({ level: "warn", warning: "budget", requestId: "loyw3v28-9" });
    expect(warning?.message).toContain("80% of rowsRead (4000 of 5000)");
  });

  it("keeps a failed call's message; its stack only as the mapper shows it; neither in its own log", () => {
    const written: string[] = [];
    const hub = new LogHub({ write: (text: string) => written.push(text) });
    const failed = (stack: string) => {
      const record = call(4, "handler_error").call;
      record.error = { message: "Uncaught Error: boom", stack };
      return record;
    };
    hub.recordCall(
      "d1",
      "list1",
      { startedMs: 1_700_000_000_000, seq: 1 },
      failed("    at f (capsule.js:1:2)"),
    );
    hub.mapStacks("d1", (stack) => stack.replace("capsule.js:1:2", "server/index.ts:3:4"));
    hub.recordCall(
      "d1",
      "list1",
      { startedMs: 1_700_000_000_000, seq: 2 },
      failed("    at f (capsule.js:1:2)"),
    );
    hub.mapStacks("d1", () => undefined);
    hub.recordCall(
      "d1",
      "list1",
      { startedMs: 1_700_000_000_000, seq: 3 },
      failed("    at f (capsule.js:1:2)"),
    );
    expect(hub.recent("d1").map((line) => line.call?.error)).toEqual([
      { message: "Uncaught Error: boom" },
      { message: "Uncaught Error: boom", stack: "    at f (server/index.ts:3:4)" },
      { message: "Uncaught Error: boom" },
    ]);
    expect(written).toHaveLength(3);
    for (const text of written) {
      expect(JSON.parse(text)).toMatchObject({ message: "mutation list1 handler_error" });
      expect(text).not.toContain("boom");
      expect(text).not.toContain("index.ts");
    }
  });

  it("writes a tenant's escape codes and reordering marks as JSON escapes, the same values", () => {
    const written: string[] = [];
    const hub = new LogHub({ write: (text: string) => written.push(text) });
    const hostile = "\u009b2J\u001b]52;c;cm0gLXJmIH4=\u0007 \u202egnp.exe \u2066x\u2069";
    hub.sink(
      "d1",
      "add",
      { startedMs: 1_700_000_000_000, seq: 1 },
      {},
    )({
      level: "info",
      message: hostile,
      fields: { [hostile]: [hostile] },
    });
    expect(written).toHaveLength(1);
    const [text = ""] = written;
    expect(text.endsWith("\n")).toBe(true);
    expect(text.slice(0, -1)).not.toMatch(UNPRINTABLE);
    expect(JSON.parse(text)).toMatchObject({ message: hostile, fields: { [hostile]: [hostile] } });
  });

  it("never marks a handler's line as the platform's own, whatever it logs", () => {
    const hub = new LogHub(false);
    hub.sink(
      "d1",
      "dashboard",
      { startedMs: 1_700_000_000_000, seq: 1 },
      {},
    )({
      level: "info",
      message: "dashboard: operator deleted messages row k1",
      fields: { platform: true, by: "operator" },
    });
    const [forged] = hub.recent("d1");
    expect(forged?.platform).toBeUndefined();
    expect(forged?.handler).toBe("dashboard");
  });
});
