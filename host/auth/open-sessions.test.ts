import { describe, expect, it } from "vitest";
import { OpenSessions } from "./open-sessions.js";

const keyHex = (deployment: string, session: string) =>
  Buffer.from(`${deployment}/${session}`).toString("hex");

describe("OpenSessions", () => {
  it("runs a retirement after the writes in flight, holds new ones, and ends every holder", async () => {
    const sessions = new OpenSessions(keyHex);
    const ended: string[] = [];
    const a = sessions.hold("d", "s", (reason) => ended.push(`a: ${reason}`));
    const b = sessions.hold("d", "s", (reason) => ended.push(`b: ${reason}`));
    expect(a.gate).toBe(b.gate);
    const steps: string[] = [];
    a.gate.writing++;
    const retired = sessions.retire(
      "d",
      "s",
      "upgraded",
      async () => {
        steps.push("retire");
        return { upgraded: true };
      },
      (result) => result.upgraded,
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(steps).toEqual([]);
    expect(b.gate.settling).not.toBeNull();
    steps.push("write done");
    a.gate.endWrite();
    await retired;
    expect(steps).toEqual(["write done", "retire"]);
    expect(ended).toEqual(["a: upgraded", "b: upgraded"]);
    expect(a.gate.ended).toBe(true);
    expect(a.gate.settling).toBeNull();
  });

  it("keeps the session when the retirement did not retire it, and forgets unused gates", async () => {
    const sessions = new OpenSessions(keyHex);
    const ended: string[] = [];
    const held = sessions.hold("d", "s", (reason) => ended.push(reason));
    await expect(
      sessions.retire(
        "d",
        "s",
        "upgraded",
        async () => {
          throw new Error("hook refused");
        },
        () => true,
      ),
    ).rejects.toThrow("hook refused");
    await sessions.retire(
      "d",
      "s",
      "upgraded",
      async () => ({ upgraded: false }),
      (r) => r.upgraded,
    );
    expect(ended).toEqual([]);
    expect(held.gate.ended).toBe(false);
    expect(sessions.noticeCommit("d", [keyHex("d", "s")])).toEqual([held.gate]);
    // A commit that names no keys concerns its own deployment's sessions only.
    expect(sessions.noticeCommit("d", undefined)).toEqual([held.gate]);
    expect(sessions.noticeCommit("other", undefined)).toEqual([]);
    expect(sessions.noticeCommit("d2", undefined)).toEqual([]);
    held.release();
    expect(sessions.noticeCommit("d", [keyHex("d", "s")])).toEqual([]);
    expect(sessions.noticeCommit("d", undefined)).toEqual([]);
  });
});
