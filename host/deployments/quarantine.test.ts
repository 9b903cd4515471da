import { describe, expect, it } from "vitest";
import { isPlatformError, type PlatformError } from "../../sdk/values/index.js";
import { Quarantine } from "./quarantine.js";
import type { DeploymentRecord } from "./records.js";

const record = (id: string, artifact: string, owner: string | null) =>
  ({ id, artifact, owner }) as unknown as DeploymentRecord;

function refusal(run: () => void): PlatformError | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (!isPlatformError(error)) throw error;
    return error;
  }
}

const none = { bundles: {}, deployments: {}, owners: {} };

describe("a server's quarantine", () => {
  it("refuses calls to a deployment by its bundle, its id or its owner, with the seconds left", () => {
    const q = new Quarantine();
    const soon = Date.now() + 4_500;
    q.replace(
      Quarantine.parse({
        calls: { bundles: { "-:bad": soon }, deployments: { app: soon }, owners: { dev_1: soon } },
        deploys: none,
      }),
    );
    for (const held of [
      record("other", "bad", null),
      record("app", "new", null),
      record("x", "y", "dev_1"),
    ]) {
      const error = refusal(() => q.check(held));
      expect(error?.code, held.id).toBe("unavailable");
      expect(error?.retryAfterSeconds).toBe(5);
    }
    expect(refusal(() => q.check(record("x", "y", "dev_2")))).toBeUndefined();
    expect(refusal(() => q.check(record("x", "y", null)))).toBeUndefined();
    // The bundle is held for the developer whose deployment crashed (here: unclaimed ones) only.
    expect(refusal(() => q.check(record("other", "bad", "dev_2")))).toBeUndefined();
    expect(refusal(() => q.check(record("x", "y", "dev_1")))?.message).toContain(
      "requests to deployments of its developer crashed the host",
    );
  });

  it("takes deploys of changed code after a crash in a call, never of the bundle that crashed", () => {
    const q = new Quarantine();
    const soon = Date.now() + 60_000;
    q.replace(
      Quarantine.parse({
        calls: { bundles: { "dev_1:bad": soon }, deployments: { app: soon }, owners: { dev_1: soon } },
        deploys: { bundles: {}, deployments: { app: Date.now() + 5_000 }, owners: {} },
      }),
    );
    expect(refusal(() => q.checkDeploy("fixed", "other", "dev_1"))).toBeUndefined();
    const same = refusal(() => q.checkDeploy("bad", "elsewhere", "dev_1"));
    expect(same?.message).toMatch(/^This bundle is quarantined for 60 s: it crashed the host/);
    // Told the later of the two ends: retrying sooner would only be refused again.
    expect(refusal(() => q.checkDeploy("bad", "app", "dev_1"))?.retryAfterSeconds).toBe(60);
    expect(refusal(() => q.checkDeploy("bad", "elsewhere", "dev_2"))).toBeUndefined();
  });

  it("refuses deploys to a deployment or by a developer whose deploys crashed the host, whatever the bundle", () => {
    const q = new Quarantine();
    const soon = Date.now() + 60_000;
    q.replace(
      Quarantine.parse({
        calls: none,
        deploys: { bundles: {}, deployments: { app: soon }, owners: { dev_1: soon } },
      }),
    );
    expect(refusal(() => q.checkDeploy("new", "app", null))?.message).toMatch(
      /^Deployment app takes no deploys for 60 s: deploying code to it crashed the host/,
    );
    const developer = refusal(() => q.checkDeploy("new", "fresh", "dev_1"));
    expect(developer?.message).toMatch(/^Developer dev_1 can deploy again in 60 s/);
    expect(developer?.retryAfterSeconds).toBe(60);
    expect(refusal(() => q.checkDeploy("new", "other", "dev_2"))).toBeUndefined();
    // Calls are another list: this one holds only deploys.
    expect(refusal(() => q.check(record("app", "new", "dev_1")))).toBeUndefined();
  });

  it("lets go when a quarantine has ended, and answers the longest one left", () => {
    const q = new Quarantine();
    const now = Date.now();
    q.replace(
      Quarantine.parse({
        calls: {
          bundles: { "-:bad": now - 1 },
          deployments: { app: now + 2_000 },
          owners: { dev_1: now + 30_000 },
        },
      }),
    );
    expect(q.held(record("z", "bad", null))).toBeUndefined();
    expect(q.held(record("app", "bad", "dev_1"))).toEqual({ until: now + 30_000, why: "owner" });
    expect(q.activeCounts()).toEqual({ bundles: 0, deployments: 1, owners: 1 });
  });

  it("reads what it is handed strictly: malformed parts are none, inherited names are never held", () => {
    const empty = { calls: none, deploys: none };
    expect(Quarantine.parse(null)).toEqual(empty);
    expect(Quarantine.parse({ calls: "x" })).toEqual(empty);
    expect(Quarantine.parse({ calls: { bundles: "x", deployments: { a: "1", b: 2 } } })).toEqual({
      calls: { bundles: {}, deployments: { b: 2 }, owners: {} },
      deploys: none,
    });
    const q = new Quarantine();
    q.replace(Quarantine.parse({ calls: { deployments: { other: Date.now() + 60_000 } } }));
    expect(q.held(record("toString", "constructor", "__proto__"))).toBeUndefined();
    expect(refusal(() => q.checkDeploy("hasOwnProperty", "valueOf", "__proto__"))).toBeUndefined();
    expect(q.holdsAny).toBe(true);
    q.replace(Quarantine.parse({}));
    expect(q.holdsAny).toBe(false);
  });

  it("reads the bundles a supervisor started before an upgrade hands over, for every developer", () => {
    const until = Date.now() + 60_000;
    const q = new Quarantine();
    q.replace(Quarantine.parse({ "00ee95": until }));
    expect(q.held(record("app", "00ee95", null))).toEqual({ until, why: "bundle" });
    expect(q.held(record("app", "00ee95", "dev_1"))).toEqual({ until, why: "bundle" });
  });
});
