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
    expect(said).toContain(
      `quarantining deployment one and its deploys for ${FIRST / 1000} s: deploying it crashed the server`,
    );
    book.record({ artifact: "b", deployment: "two", owner: "dev_1", deploying: true }, T0 + 1);
    const held = book.handOver(T0 + 1);
    expect(held.deploys).toEqual({
      bundles: { "dev_1:a": T0 + FIRST, "dev_1:b": T0 + 1 + FIRST },
      deployments: { one: T0 + FIRST, two: T0 + 1 + FIRST },
      owners: { dev_1: T0 + 1 + FIRST },
    });
    expect(held.calls.owners).toEqual({ dev_1: T0 + 1 + FIRST });
  });

  it("stay open to an honest developer after an old crash while deploying, whoever crashes their calls", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "shop", owner: "dev_1", deploying: true }, T0);
    // An anonymous caller crashes a handler of the deployed fix as soon as calls are taken again.
    let now = T0 + FIRST;
    for (let i = 0; i < 6; i++) {
      book.record({ artifact: "fixed", deployment: "shop", owner: "dev_1" }, now);
      const held = book.handOver(now + 1);
      expect(held.deploys.deployments).toEqual({});
      now = held.calls.deployments.shop as number;
    }
  });

  it("a deploy that crashes while a call's crash holds its deployment adds its length after that hold", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "app", owner: "dev_1" }, T0);
    book.record({ artifact: "b", deployment: "app", owner: "dev_1", deploying: true }, T0 + 1000);
    const held = book.handOver(T0 + 1000);
    expect(held.calls.deployments).toEqual({ app: T0 + FIRST + FIRST * 2 });
    expect(held.deploys.deployments).toEqual({ app: T0 + FIRST + FIRST * 2 });
  });

  it("a repeat is a repeat across server starts: an entry ended is kept while it would lengthen the next", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one" }, T0);
    // Another deployment's crash after the first one's end starts a server, which is handed the list.
    book.record({ artifact: "b", deployment: "two" }, T0 + FIRST + 1);
    book.handOver(T0 + FIRST + 1);
    book.record({ artifact: "c", deployment: "one" }, T0 + FIRST + 2);
    expect(book.handOver(T0 + FIRST + 2).calls.deployments.one).toBe(T0 + FIRST + 2 + FIRST * 2);
  });
});

type Choice = "call" | "deploy" | undefined;
/** What a hostile developer does each second, given what is open and their crashes so far (s, kind). */
type Strategy = (
  open: { call: boolean; deploy: boolean },
  nowS: number,
  past: Array<[number, string]>,
) => Choice;

/**
 * A hostile developer crashing the host as the quarantines let them, trying every second, each
 * time from a fresh deployment with a fresh bundle (only their developer's quarantine can hold
 * them): their crashes (s, kind) over four hours.
 */
function hostile(strategy: Strategy): Array<[number, string]> {
  const book = new QuarantineBook();
  const crashes: Array<[number, string]> = [];
  for (let now = 0, n = 0; now < 4 * 3600_000; now += 1000) {
    const held = book.handOver(now);
    const open = {
      call: !((held.calls.owners.dev_m ?? 0) > now),
      deploy: !((held.deploys.owners.dev_m ?? 0) > now),
    };
    const kind = strategy(open, now / 1000, crashes);
    if (!kind || !open[kind]) continue;
    book.record(
      { artifact: `b${n}`, deployment: `d${n}`, owner: "dev_m", deploying: kind === "deploy" },
      now,
    );
    n++;
    crashes.push([now / 1000, kind]);
  }
  return crashes;
}

let seed = 7;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const STRATEGIES: Record<string, Strategy> = {
  calls: (open) => (open.call ? "call" : undefined),
  deploys: (open) => (open.deploy ? "deploy" : undefined),
  "calls, else deploys": (open) => (open.call ? "call" : open.deploy ? "deploy" : undefined),
  "deploys, else calls": (open) => (open.deploy ? "deploy" : open.call ? "call" : undefined),
  "eight calls, then deploys": (_open, _now, past) => (past.length < 8 ? "call" : "deploy"),
  "a deploy every 10 minutes between calls": (open, now, past) => {
    const lastDeploy = Math.max(-1e9, ...past.filter(([, kind]) => kind === "deploy").map(([at]) => at));
    return open.deploy && now - lastDeploy >= 600 ? "deploy" : "call";
  },
  // Deploys stay open while a crash in a call holds the developer (for the fix): a deploy that
  // crashes the next second is the one extra crash each hold's end lets in.
  "a call as each hold ends, a deploy the next second": (open, now, past) => {
    const last = past.at(-1);
    if (last?.[1] === "call" && now - last[0] === 1) return open.deploy ? "deploy" : undefined;
    return open.call ? "call" : undefined;
  },
  "bursts of four, 11 minutes apart": (_open, now, past) =>
    past.length > 0 && past.length % 4 === 0 && now - (past.at(-1)?.[0] ?? 0) < 660 ? undefined : "call",
  "either, now and then": () => {
    const draw = random();
    return draw < 0.01 ? "call" : draw < 0.02 ? "deploy" : undefined;
  },
};

describe("a hostile developer's crashes", () => {
  it("come at most nine in the first 11 minutes, then one per 10 minutes, crashing as soon as allowed", () => {
    for (const name of ["calls", "deploys"]) {
      const crashes = hostile(STRATEGIES[name] as Strategy).map(([at]) => at);
      expect(crashes.slice(0, 9), name).toEqual([0, 1, 6, 16, 36, 76, 156, 316, 636]);
      const later = crashes.slice(9);
      for (let i = 1; i < later.length; i++)
        expect((later[i] as number) - (later[i - 1] as number)).toBe(600);
    }
  });

  it("come hardly faster mixing calls and deploys, or pausing: at most 10 in 11 minutes, 14 in an hour, 32 in four", () => {
    for (const [name, strategy] of Object.entries(STRATEGIES)) {
      const crashes = hostile(strategy).map(([at]) => at);
      expect(crashes.filter((at) => at < 11 * 60).length, name).toBeLessThanOrEqual(10);
      for (const from of crashes)
        expect(crashes.filter((at) => at >= from && at < from + 3600).length, name).toBeLessThanOrEqual(14);
      expect(crashes.length, name).toBeLessThanOrEqual(32);
    }
    // The bounds are met: a call as each hold ends and a deploy the next second reach them.
    const paired = hostile(STRATEGIES["a call as each hold ends, a deploy the next second"] as Strategy);
    expect(paired.slice(0, 6)).toEqual([
      [0, "call"],
      [1, "deploy"],
      [6, "call"],
      [7, "deploy"],
      [36, "call"],
      [37, "deploy"],
    ]);
    expect(paired.filter(([at]) => at < 11 * 60)).toHaveLength(10);
    expect(paired).toHaveLength(32);
  });
});
