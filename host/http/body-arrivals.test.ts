import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { BodyArrivals } from "./body-arrivals.js";

const KIB = 1024;

/** A request of client `client` (its address, as the arrivals look it up) that records its closing. */
function request(client: string): IncomingMessage & { closed: boolean } {
  const req = {
    client,
    closed: false,
    destroy() {
      req.closed = true;
      return req;
    },
  };
  return req as unknown as IncomingMessage & { closed: boolean };
}

/** Arrivals of at most `perClient` and `total` bytes, reading `clock.ms` as their clock. */
function arrivalsOnAClock(perClient: number, total: number) {
  const clock = { ms: 0 };
  const arrivals = new BodyArrivals(
    { perClient, total },
    (req) => (req as unknown as { client: string }).client,
    () => clock.ms,
  );
  return { clock, arrivals };
}

describe("BodyArrivals", () => {
  it("makes room for a client within an even share once the host is full, from bodies standing still, and refuses one past it", () => {
    const { clock, arrivals } = arrivalsOnAClock(256 * KIB, 512 * KIB);
    const a = request("10.0.0.1");
    const b = request("10.0.0.2");
    const c = request("10.0.0.3");
    const d = request("10.0.0.4");
    expect(arrivals.begin(a).take(200 * KIB)).toBeUndefined();
    const fromB = arrivals.begin(b);
    expect(fromB.take(200 * KIB)).toBeUndefined();
    // 550 KiB in all, 10.0.0.3 within a third of 512, but both others' bodies still arriving: refused.
    const fromC = arrivals.begin(c);
    expect(fromC.take(150 * KIB)).toMatchObject({ code: "unavailable" });
    expect([a.closed, b.closed]).toEqual([false, false]);
    // Once they stood still a while, the oldest body of the heaviest goes for it.
    clock.ms += LIMITS.heldStalledMs;
    expect(fromC.take(150 * KIB)).toBeUndefined();
    expect([a.closed, b.closed, c.closed]).toEqual([true, false, false]);
    expect(arrivals.arriving).toBe(350 * KIB);
    // 10.0.0.4 with 200 KiB would be past a third of 512 KiB: refused, nothing dropped.
    expect(arrivals.begin(d).take(200 * KIB)).toMatchObject({ code: "unavailable", retryAfterSeconds: 1 });
    expect([b.closed, c.closed, d.closed]).toEqual([false, false, false]);
    // A body's end gives its bytes back.
    fromB.end();
    expect(arrivals.arriving).toBe(150 * KIB);
  });

  it("takes a body trickling in a few bytes at a time for one standing still", () => {
    const { clock, arrivals } = arrivalsOnAClock(256 * KIB, 512 * KIB);
    const a = request("10.0.0.1");
    const b = request("10.0.0.2");
    const fromA = arrivals.begin(a);
    const fromB = arrivals.begin(b);
    expect(fromA.take(200 * KIB)).toBeUndefined();
    expect(fromB.take(200 * KIB)).toBeUndefined();
    // For longer than a holding may stand still, a's body trickles in 10 bytes every 100 ms, and
    // b's in 1 KiB every 100 ms.
    for (let step = 0; step < 12; step++) {
      clock.ms += 100;
      expect(fromA.take(10)).toBeUndefined();
      expect(fromB.take(KIB)).toBeUndefined();
    }
    // A third client takes a's room: a's body stood still all along, b's moved.
    expect(arrivals.begin(request("10.0.0.3")).take(150 * KIB)).toBeUndefined();
    expect([a.closed, b.closed]).toEqual([true, false]);
  });

  it("takes a large body arriving slowly for its size for one standing still: it must move a 300th of itself", () => {
    const MiB = 1024 * KIB;
    const { clock, arrivals } = arrivalsOnAClock(64 * MiB, 100 * MiB);
    const a = request("10.0.0.1");
    const fromA = arrivals.begin(a);
    expect(fromA.take(60 * MiB)).toBeUndefined();
    // 10 KiB a second: well over 1 KiB, well under the 205 KiB a second 60 MiB must move.
    for (let step = 0; step < 12; step++) {
      clock.ms += 100;
      expect(fromA.take(KIB)).toBeUndefined();
    }
    expect(arrivals.begin(request("10.0.0.2")).take(50 * MiB)).toBeUndefined();
    expect(a.closed).toBe(true);
  });
});
