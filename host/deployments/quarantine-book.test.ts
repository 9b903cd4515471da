import { describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { bundleKey, nextQuarantine, QuarantineBook } from "./quarantine-book.js";

const FIRST = LIMITS.quarantineFirstMs;
const MAX = LIMITS.quarantineMaxMs;
const T0 = 1_000_000_000_000;
const NONE = { bundles: {}, deployments: {}, owners: {} };

describe("the supervisor's quarantine book", () => {
  it("quarantines a crash's bundle (for its developer) and deployment; a new bundle of that deployment stays refused", () => {
    const book = new QuarantineBook();
    const said = book.record({ artifact: "aaa", deployment: "app", owner: "dev_1" }, T0);
    expect(said).toEqual([
      `quarantining bundle dev_1:aaa for ${FIRST / 1000} s: it crashed the server`,
      `quarantining deployment app for ${FIRST / 1000} s: it crashed the server`,
    ]);
    expect(book.handOver(T0 + 1)).toEqual({
      calls: {
        bundles: { [bundleKey("aaa", "dev_1")]: T0 + FIRST },
        deployments: { app: T0 + FIRST },
        owners: {},
      },
      deploys: NONE,
    });
    expect(book.handOver(T0 + FIRST).calls).toEqual(NONE);
  });

  it("doubles a deployment's quarantine on each crash soon after, whatever bundle crashed", () => {
    const book = new QuarantineBook();
    let now = T0;
    const lengths: number[] = [];
    for (const artifact of ["b1", "b2", "b3", "b4"]) {
      book.record({ artifact, deployment: "app", owner: "dev_1" }, now);
      const until = book.handOver(now).calls.deployments.app as number;
      lengths.push(until - now);
      // The attacker deploys a changed bundle and crashes the host again as soon as it may.
      now = until + 1;
    }
    expect(lengths).toEqual([FIRST, FIRST * 2, FIRST * 4, FIRST * 8]);
    // Each bundle crashed once: by bundle alone, each would have started at the first length.
    expect(book.handOver(now - 1).calls.bundles).toEqual({});
  });

  it("halves a quarantine for each quiet 10 minutes after its end instead of forgetting it", () => {
    /** The length of the quarantine after a crash `quietMs` after the end of one at the cap. */
    const lengthAfterQuiet = (quietMs: number) => {
      const book = new QuarantineBook();
      let t = T0;
      for (let i = 0; i < 8; i++) {
        book.record({ artifact: `b${i}`, deployment: "app" }, t);
        t = book.handOver(t).calls.deployments.app as number;
      }
      book.record({ artifact: "late", deployment: "app" }, t + quietMs);
      return (book.handOver(t + quietMs).calls.deployments.app as number) - (t + quietMs);
    };
    // At the cap: 10 quiet minutes leave it there, 20 halve it, and so on down to the first.
    expect([0, MAX - 1, MAX, 2 * MAX, 3 * MAX, 20 * MAX].map(lengthAfterQuiet)).toEqual([
      MAX,
      MAX,
      MAX,
      MAX / 2,
      MAX / 4,
      FIRST,
    ]);
  });

  it("quarantines a developer once two of their deployments crashed within 10 minutes, doubling after", () => {
    const book = new QuarantineBook();
    expect(book.record({ artifact: "a", deployment: "one", owner: "dev_1" }, T0)).toHaveLength(2);
    expect(book.handOver(T0).calls.owners).toEqual({});
    const said = book.record({ artifact: "b", deployment: "two", owner: "dev_1" }, T0 + 1000);
    expect(said).toContain(
      `quarantining developer dev_1 for ${FIRST / 1000} s: 2 of their deployments crashed the server lately`,
    );
    expect(book.handOver(T0 + 1000).calls.owners).toEqual({ dev_1: T0 + 1000 + FIRST });
    const later = T0 + 1000 + FIRST + 1;
    book.record({ artifact: "c", deployment: "three", owner: "dev_1" }, later);
    expect(book.handOver(later).calls.owners).toEqual({ dev_1: later + FIRST * 2 });
    // Held once, the developer is held again by a crash long after the older ones.
    const muchLater = later + FIRST * 2 + MAX + 1;
    book.record({ artifact: "d", deployment: "four", owner: "dev_1" }, muchLater);
    expect(book.handOver(muchLater).calls.owners).toEqual({ dev_1: muchLater + FIRST * 2 });
  });

  it("does not quarantine a developer for one deployment crashing twice, nor for crashes far apart", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one", owner: "dev_1" }, T0);
    book.record({ artifact: "a2", deployment: "one", owner: "dev_1" }, T0 + FIRST + 1);
    expect(book.handOver(T0 + FIRST + 1).calls.owners).toEqual({});
    const far = T0 + FIRST + 2 + MAX + 1;
    book.record({ artifact: "b", deployment: "two", owner: "dev_1" }, far);
    expect(book.handOver(far).calls.owners).toEqual({});
  });

  it("quarantines no developer for unclaimed deployments or crashes that name none", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one", owner: null }, T0);
    book.record({ artifact: "b", deployment: "two" }, T0);
    book.record({ artifact: "c" }, T0);
    expect(book.handOver(T0).calls).toEqual({
      bundles: { "-:a": T0 + FIRST, "-:b": T0 + FIRST, "-:c": T0 + FIRST },
      deployments: { one: T0 + FIRST, two: T0 + FIRST },
      owners: {},
    });
  });

  it("forgets what no longer lengthens a quarantine", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "app", owner: "dev_1" }, T0);
    book.record({ artifact: "b", deployment: "other", owner: "dev_1" }, T0);
    const much = T0 + FIRST + MAX + 1;
    expect(book.handOver(much)).toEqual({ calls: NONE, deploys: NONE });
    book.record({ artifact: "a", deployment: "app", owner: "dev_1" }, much);
    expect(book.handOver(much).calls).toEqual({
      bundles: { "dev_1:a": much + FIRST },
      deployments: { app: much + FIRST },
      owners: {},
    });
  });

  it("caps a quarantine's length", () => {
    let entry = nextQuarantine(undefined, T0);
    for (let i = 0; i < 20; i++) entry = nextQuarantine(entry, entry.until + 1);
    expect(entry.lengthMs).toBe(MAX);
  });

  it("takes the first length the operator chose (platform host --quarantine)", () => {
    const book = new QuarantineBook(120_000);
    book.record({ artifact: "a", deployment: "app" }, T0);
    expect(book.handOver(T0).calls.deployments).toEqual({ app: T0 + 120_000 });
    book.record({ artifact: "b", deployment: "app" }, T0 + 120_001);
    expect(book.handOver(T0 + 120_001).calls.deployments).toEqual({ app: T0 + 120_001 + 240_000 });
  });
});

describe("deploys", () => {
  it("are held only after a crash while deploying: a crash in a call leaves the fix deployable", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one", owner: "dev_1" }, T0);
    book.record({ artifact: "b", deployment: "two", owner: "dev_1" }, T0 + 1);
    expect(book.handOver(T0 + 1).deploys).toEqual(NONE);
    expect(Object.keys(book.handOver(T0 + 1).calls.owners)).toEqual(["dev_1"]);
  });

  it("of a deployment whose deploy crashed, and of its developer after two, are held, and so are its calls", () => {
    const book = new QuarantineBook();
    const said = book.record({ artifact: "a", deployment: "one", owner: "dev_1", deploying: true }, T0);
    expect(said).toContain(`refusing deploys to deployment one for ${FIRST / 1000} s: it crashed the server`);
    expect(said).toContain(`quarantining deployment one for ${FIRST / 1000} s: it crashed the server`);
    book.record({ artifact: "b", deployment: "two", owner: "dev_1", deploying: true }, T0 + 1);
    const held = book.handOver(T0 + 1);
    expect(held.deploys).toEqual({
      bundles: { "dev_1:a": T0 + FIRST, "dev_1:b": T0 + 1 + FIRST },
      deployments: { one: T0 + FIRST, two: T0 + 1 + FIRST },
      owners: { dev_1: T0 + 1 + FIRST },
    });
    expect(held.calls.owners).toEqual({ dev_1: T0 + 1 + FIRST });
  });

  it("are held by a crash in a call too once that developer's deploys crashed the host lately", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one", owner: "dev_1", deploying: true }, T0);
    const later = T0 + FIRST + 1;
    const said = book.record({ artifact: "b", deployment: "one", owner: "dev_1" }, later);
    expect(said).toContain(
      `refusing deploys to deployment one for ${(FIRST * 2) / 1000} s: it crashed the server`,
    );
    expect(book.handOver(later).deploys.deployments).toEqual({ one: later + FIRST * 2 });
  });
});

/**
 * A hostile developer crashing the host as often as the quarantines let them, trying every second,
 * each time from a fresh deployment with a fresh bundle (only their developer's quarantine can
 * hold them): the crash times in seconds over four hours.
 */
function hostile(strategy: "calls" | "deploys" | "callsFirst" | "pausing"): number[] {
  const book = new QuarantineBook();
  const crashes: number[] = [];
  let pausedUntil = 0;
  for (let now = 0, n = 0; now < 4 * 60 * 60_000; now += 1000) {
    if (now < pausedUntil) continue;
    const held = book.handOver(now);
    const callsOpen = !((held.calls.owners.dev_m ?? 0) > now);
    const deploysOpen = !((held.deploys.owners.dev_m ?? 0) > now);
    const deploying =
      strategy === "deploys" ? deploysOpen : strategy === "callsFirst" && !callsOpen && deploysOpen;
    if (!deploying && (strategy === "deploys" || !callsOpen)) continue;
    book.record({ artifact: `b${n}`, deployment: `d${n}`, owner: "dev_m", deploying }, now);
    n++;
    crashes.push(now / 1000);
    // Bursts of four, then 11 quiet minutes (once a quiet spell reset a developer's quarantine).
    if (strategy === "pausing" && crashes.length % 4 === 0) pausedUntil = now + 11 * 60_000;
  }
  return crashes;
}

describe("a hostile developer's crashes", () => {
  it("come at most nine in the first 11 minutes, then one per 10 minutes, crashing as soon as allowed", () => {
    for (const strategy of ["calls", "deploys"] as const) {
      const crashes = hostile(strategy);
      expect(crashes.slice(0, 9), strategy).toEqual([0, 1, 6, 16, 36, 76, 156, 316, 636]);
      const later = crashes.slice(9);
      for (let i = 1; i < later.length; i++)
        expect((later[i] as number) - (later[i - 1] as number)).toBe(600);
    }
  });

  it("come no faster for alternating calls and deploys, or for pausing: at most 11 in 11 minutes, 33 in four hours", () => {
    for (const strategy of ["calls", "deploys", "callsFirst", "pausing"] as const) {
      const crashes = hostile(strategy);
      expect(crashes.filter((at) => at < 11 * 60).length, strategy).toBeLessThanOrEqual(11);
      expect(crashes.length, strategy).toBeLessThanOrEqual(33);
    }
  });
});
