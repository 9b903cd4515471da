/**
 * Reading a platform call from an isolate: a call of an execution that ended (code a handler left
 * running) is refused before its text is checked or parsed, on the host's main thread, and a call
 * cannot name one execution in its envelope's start and another later.
 */
import { describe, expect, it } from "vitest";
import { SlotTable } from "./inline/slot-table.js";
import { readCall } from "./syscall-wire.js";
import type { RunningExecution } from "./transport.js";

function runningOne(answered = false): SlotTable<RunningExecution> {
  const running = new SlotTable<RunningExecution>();
  running.set(7, { answered } as RunningExecution);
  return running;
}

describe("readCall", () => {
  it("refuses a call of an execution that is not running before reading the rest of it", () => {
    // The rest is not even JSON: a parse would have failed with bad_request, after reading it all.
    const call = `{"requestId":8,"op":"v1.db.get","args":${"[".repeat(1_000_000)}`;
    expect(() => readCall(call, runningOne())).toThrow(expect.objectContaining({ code: "forbidden" }));
    const answered = `{"requestId":7,"op":"v1.db.get","args":${"[".repeat(1_000_000)}`;
    expect(() => readCall(answered, runningOne(true))).toThrow(
      expect.objectContaining({ code: "forbidden" }),
    );
  });

  it("refuses a call whose envelope names one execution and a later member another", () => {
    expect(() => readCall('{"requestId":7,"op":"v1.db.get","requestId":9}', runningOne())).toThrow(
      expect.objectContaining({ code: "bad_request" }),
    );
  });

  it("reads a running execution's call", () => {
    const call = readCall('{"requestId":7,"op":"v1.db.get","args":{"table":"t","id":"x"}}', runningOne());
    expect(call).toMatchObject({ requestId: 7, op: "v1.db.get", args: { table: "t", id: "x" } });
    expect(call.execution).toBeDefined();
  });
});
