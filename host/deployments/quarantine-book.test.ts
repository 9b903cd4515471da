import { describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { nextQuarantine, QuarantineBook } from "./quarantine-book.js";

const FIRST = LIMITS.quarantineFirstMs;
const T0 = 1_000_000_000_000;

describe("the supervisor's quarantine book", () => {
  it("quarantines a crash's bundle and deployment; a new bundle of that deployment stays refused", () => {
    const book = new QuarantineBook();
    const said = book.record({ artifact: "aaa", deployment: "app", owner: "dev_1" }, T0);
    expect(said).toEqual([
      `quarantining bundle aaa for ${FIRST / 1000} s: it crashed the server`,
      `quarantining deployment app for ${FIRST / 1000} s: it crashed the server`,
    ]);
    expect(book.handOver(T0 + 1).calls).toEqual({
      bundles: { aaa: T0 + FIRST },
      deployments: { app: T0 + FIRST },
      owners: {},
    });
    expect(book.handOver(T0 + FIRST).calls).toEqual({ bundles: {}, deployments: {}, owners: {} });
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

  it("quarantines a developer once two of their deployments crashed within the cap, doubling after", () => {
    const book = new QuarantineBook();
    expect(book.record({ artifact: "a", deployment: "one", owner: "dev_1" }, T0)).toHaveLength(2);
    expect(book.handOver(T0).calls.owners).toEqual({});
    const said = book.record({ artifact: "b", deployment: "two", owner: "dev_1" }, T0 + 1000);
    expect(said).toContain(
      `quarantining developer dev_1 for ${FIRST / 1000} s: 2 of their deployments crashed the server lately`,
    );
    expect(book.handOver(T0 + 1000).calls.owners).toEqual({ dev_1: T0 + 1000 + FIRST });
    // A third deployment crashing after that quarantine ended doubles it.
    const later = T0 + 1000 + FIRST + 1;
    book.record({ artifact: "c", deployment: "three", owner: "dev_1" }, later);
    expect(book.handOver(later).calls.owners).toEqual({ dev_1: later + FIRST * 2 });
    // Another developer is not touched.
    expect(Object.keys(book.handOver(later).calls.owners)).toEqual(["dev_1"]);
  });

  it("does not quarantine a developer for one deployment crashing twice, nor for crashes far apart", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one", owner: "dev_1" }, T0);
    book.record({ artifact: "a2", deployment: "one", owner: "dev_1" }, T0 + FIRST + 1);
    expect(book.handOver(T0 + FIRST + 1).calls.owners).toEqual({});
    const far = T0 + FIRST + 2 + LIMITS.quarantineMaxMs + 1;
    book.record({ artifact: "b", deployment: "two", owner: "dev_1" }, far);
    expect(book.handOver(far).calls.owners).toEqual({});
  });

  it("quarantines no developer for unclaimed deployments or crashes that name none", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one", owner: null }, T0);
    book.record({ artifact: "b", deployment: "two" }, T0);
    book.record({ artifact: "c" }, T0);
    expect(book.handOver(T0).calls).toEqual({
      bundles: { a: T0 + FIRST, b: T0 + FIRST, c: T0 + FIRST },
      deployments: { one: T0 + FIRST, two: T0 + FIRST },
      owners: {},
    });
  });

  it("starts afresh once a quarantine ended longer ago than the cap", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "app" }, T0);
    const much = T0 + FIRST + LIMITS.quarantineMaxMs;
    expect(book.handOver(much).calls).toEqual({ bundles: {}, deployments: {}, owners: {} });
    book.record({ artifact: "a", deployment: "app" }, much + 1);
    expect(book.handOver(much + 1).calls.deployments).toEqual({ app: much + 1 + FIRST });
  });

  it("caps a quarantine's length", () => {
    let entry = nextQuarantine(undefined, T0);
    for (let i = 0; i < 20; i++) entry = nextQuarantine(entry, entry.until + 1);
    expect(entry.lengthMs).toBe(LIMITS.quarantineMaxMs);
  });
});

/**
 * A hostile developer crashing the host as often as the quarantines let them, each time from a
 * fresh deployment with a fresh bundle (only their developer's quarantine can hold them), `waitMs`
 * after a quarantine's end: the crash times in seconds over an hour.
 */
function hostileCrashes(waitMs: number, deploying: boolean): number[] {
  const book = new QuarantineBook();
  const crashes: number[] = [];
  let now = 0;
  for (let deployment = 0; now < 60 * 60_000; ) {
    const held = book.handOver(now);
    const until = Math.max(0, ...Object.values((deploying ? held.deploys : held.calls).owners));
    if (until > now) {
      now = until + waitMs;
      continue;
    }
    book.record({ artifact: `b${deployment}`, deployment: `d${deployment}`, owner: "dev_m", deploying }, now);
    crashes.push(now / 1000);
    deployment++;
  }
  return crashes;
}

describe("a hostile developer's crashes, each as soon as the quarantines allow", () => {
  it("are at most nine in the first 11 minutes, then one per 10 minutes", () => {
    const crashes = hostileCrashes(0, false);
    expect(crashes.slice(0, 9)).toEqual([0, 0, 5, 15, 35, 75, 155, 315, 635]);
    expect(crashes.filter((at) => at < 11 * 60)).toHaveLength(9);
    const later = crashes.slice(9);
    for (let i = 1; i < later.length; i++) expect((later[i] as number) - (later[i - 1] as number)).toBe(600);
  });

  it("stay one per 10 minutes for one who waits a moment past each end (the older crash then forgotten)", () => {
    for (const deploying of [false, true]) {
      const crashes = hostileCrashes(1000, deploying);
      expect(crashes.filter((at) => at < 11 * 60)).toHaveLength(9);
      const later = crashes.slice(9);
      expect(later.length).toBeGreaterThan(3);
      for (let i = 1; i < later.length; i++)
        expect((later[i] as number) - (later[i - 1] as number)).toBeGreaterThanOrEqual(600);
    }
  });
});

describe("deploys", () => {
  it("are held only after a crash while deploying: a crash in a call leaves the fix deployable", () => {
    const book = new QuarantineBook();
    book.record({ artifact: "a", deployment: "one", owner: "dev_1" }, T0);
    book.record({ artifact: "b", deployment: "two", owner: "dev_1" }, T0 + 1);
    expect(book.handOver(T0 + 1).deploys).toEqual({ bundles: {}, deployments: {}, owners: {} });
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
      bundles: { a: T0 + FIRST, b: T0 + 1 + FIRST },
      deployments: { one: T0 + FIRST, two: T0 + 1 + FIRST },
      owners: { dev_1: T0 + 1 + FIRST },
    });
    expect(held.calls.owners).toEqual({ dev_1: T0 + 1 + FIRST });
  });
});

it("takes the first length the operator chose (platform host --quarantine)", () => {
  const book = new QuarantineBook(120_000);
  book.record({ artifact: "a", deployment: "app" }, T0);
  expect(book.handOver(T0).calls.deployments).toEqual({ app: T0 + 120_000 });
  book.record({ artifact: "b", deployment: "app" }, T0 + 120_001);
  expect(book.handOver(T0 + 120_001).calls.deployments).toEqual({ app: T0 + 120_001 + 240_000 });
});
