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

describe("a server's quarantine", () => {
  it("refuses a deployment by its bundle, its id or its owner, with the seconds left", () => {
    const q = new Quarantine();
    const soon = Date.now() + 4_500;
    q.replace(
      Quarantine.parse({ bundles: { bad: soon }, deployments: { app: soon }, owners: { dev_1: soon } }),
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
    expect(refusal(() => q.check(record("x", "y", "dev_1")))?.message).toContain(
      "requests to deployments of its developer crashed the host",
    );
  });

  it("refuses deploys to a quarantined deployment or by a quarantined developer, whatever the bundle", () => {
    const q = new Quarantine();
    const soon = Date.now() + 60_000;
    q.replace(
      Quarantine.parse({ bundles: { bad: soon }, deployments: { app: soon }, owners: { dev_1: soon } }),
    );
    expect(refusal(() => q.checkDeploy("app", null))?.message).toMatch(
      /^Deployment app is quarantined for 60 s/,
    );
    expect(refusal(() => q.checkDeploy("fresh", "dev_1"))?.message).toMatch(
      /^Deployments of developer dev_1 are quarantined for 60 s/,
    );
    // A quarantined bundle alone refuses its calls, not a deploy of other code.
    expect(refusal(() => q.checkDeploy("other", "dev_2"))).toBeUndefined();
  });

  it("lets go when a quarantine has ended, and answers the longest one left", () => {
    const q = new Quarantine();
    const now = Date.now();
    q.replace(
      Quarantine.parse({
        bundles: { bad: now - 1 },
        deployments: { app: now + 2_000 },
        owners: { dev_1: now + 30_000 },
      }),
    );
    expect(q.held("bad", "z", null)).toBeUndefined();
    expect(q.held("bad", "app", "dev_1")).toEqual({ until: now + 30_000, why: "owner" });
    expect(q.activeCounts()).toEqual({ bundles: 0, deployments: 1, owners: 1 });
  });

  it("reads what it is handed strictly: malformed parts are none, inherited names are never held", () => {
    expect(Quarantine.parse(null)).toEqual({ bundles: {}, deployments: {}, owners: {} });
    expect(Quarantine.parse({ app: 5 })).toEqual({ bundles: {}, deployments: {}, owners: {} });
    expect(Quarantine.parse({ bundles: "x", deployments: { a: "1", b: 2 } })).toEqual({
      bundles: {},
      deployments: { b: 2 },
      owners: {},
    });
    const q = new Quarantine();
    q.replace(Quarantine.parse({ deployments: { other: Date.now() + 60_000 } }));
    expect(q.held("constructor", "toString", "__proto__")).toBeUndefined();
    expect(q.holdsAny).toBe(true);
    q.replace(Quarantine.parse({}));
    expect(q.holdsAny).toBe(false);
  });
});
