import { describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { DeveloperRecord } from "../auth/index.js";
import { DeployStarts } from "./deploy-starts.js";

const developer = (id: string) => ({ kind: "developer" as const, developer: { id } as DeveloperRecord });

describe("DeployStarts", () => {
  it("lets a developer start LIMITS.deploysPerMinute deploys a minute, each developer apart, the operator always", () => {
    const clock = { ms: 0 };
    const starts = new DeployStarts(() => clock.ms);
    for (let i = 0; i < LIMITS.deploysPerMinute; i++) starts.charge(developer("ada"));
    expect(() => starts.charge(developer("ada"))).toThrow(
      expect.objectContaining({ code: "limit_exceeded", retryAfterSeconds: 60 / LIMITS.deploysPerMinute }),
    );
    expect(() => starts.charge(developer("bo"))).not.toThrow();
    expect(() => starts.charge({ kind: "admin" })).not.toThrow();
    // A minute's share later, one more.
    clock.ms += 60_000 / LIMITS.deploysPerMinute;
    expect(() => starts.charge(developer("ada"))).not.toThrow();
    expect(() => starts.charge(developer("ada"))).toThrow();
  });
});
