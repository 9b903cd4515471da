import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_INLINE_POLICY, InlineOverrunBudget, InlineStanding, nextCooldownMs } from "./policy.js";
import { ShareWindow } from "./share-window.js";

const policy = { ...DEFAULT_INLINE_POLICY, cooldownMs: 1000, maxCooldownMs: 8000 };

describe("inline cool-downs", () => {
  it("starts short, doubles for a deployment demoted again soon, and resets after a quiet spell", () => {
    expect(nextCooldownMs(policy, null, 0)).toBe(1000);
    // Demoted again 2 s after a 1 s cool-down ended: twice as long.
    expect(nextCooldownMs(policy, { endedAt: 1000, cooldownMs: 1000 }, 3000)).toBe(2000);
    expect(nextCooldownMs(policy, { endedAt: 5000, cooldownMs: 2000 }, 5000)).toBe(4000);
    // Capped.
    expect(nextCooldownMs(policy, { endedAt: 9000, cooldownMs: 8000 }, 9500)).toBe(8000);
    // Quiet for the longest cool-down: back to the first one.
    expect(nextCooldownMs(policy, { endedAt: 9000, cooldownMs: 8000 }, 17_000)).toBe(1000);
  });
});

describe("heavy handlers", () => {
  it("leave the main thread once their average execution is over heavyMs, and come back below half of it", () => {
    const standing = new InlineStanding({ ...DEFAULT_INLINE_POLICY, heavyMs: 2 });
    standing.noteExecution("query:list", 100_000n);
    expect(standing.heavy("query:list")).toBe(false);
    // One 20 ms execution among light ones moves the average to about 4 ms: heavy.
    standing.noteExecution("query:list", 20_000_000n);
    expect(standing.heavy("query:list")).toBe(true);
    // Light executions bring it down; between 1 and 2 ms it stays where it was.
    let executions = 0;
    while (standing.heavy("query:list") && executions < 100) {
      standing.noteExecution("query:list", 100_000n);
      executions++;
    }
    expect(executions).toBeGreaterThan(3);
    expect(standing.heavy("query:list")).toBe(false);
  });

  it("are told apart by handler, and a first execution over heavyMs is enough", () => {
    const standing = new InlineStanding({ ...DEFAULT_INLINE_POLICY, heavyMs: 2 });
    standing.noteExecution("mutation:import", 3_000_000n);
    standing.noteExecution("query:get", 50_000n);
    expect(standing.heavy("mutation:import")).toBe(true);
    expect(standing.heavy("query:get")).toBe(false);
    expect(standing.heavy("query:never-ran")).toBe(false);
    // The deployment as a whole may still run inline: its light handlers do.
    expect(standing.allowed).toBe(true);
  });

  it("start a deployment's handlers not measured yet as heavy when most of its measured ones are", () => {
    const standing = new InlineStanding({ ...DEFAULT_INLINE_POLICY, heavyMs: 2 });
    expect(standing.heavy("query:first")).toBe(false);
    standing.noteExecution("query:light", 100_000n);
    expect(standing.heavy("query:new")).toBe(false);
    // Rotating names, each spinning 14 ms: every new name is taken as heavy from the start.
    for (let i = 0; i < 5; i++) standing.noteExecution(`query:b${i}`, 14_000_000n);
    expect(standing.heavy("query:b99")).toBe(true);
    // A handler measured light stays so; once most are light again, new ones start light.
    expect(standing.heavy("query:light")).toBe(false);
    for (let i = 0; i < 5; i++) standing.noteExecution(`query:l${i}`, 100_000n);
    expect(standing.heavy("query:b100")).toBe(false);
  });

  it("the recent inline CPU counts the current share window only", () => {
    const standing = new InlineStanding({ ...DEFAULT_INLINE_POLICY, windowMs: 60_000 });
    expect(standing.recentNs).toBe(0);
    standing.charge(1_500_000n);
    standing.charge(500_000n);
    expect(standing.recentNs).toBe(2_000_000);
  });
});

describe("the host's budget of demotions", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("holds back deployments demoted lately only: one demoted long ago no longer waits for it", () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const quick = { ...policy, overrunBurst: 2, overrunRefillMs: 60_000 };
    const budget = new InlineOverrunBudget(quick);
    const victim = new InlineStanding(quick, budget);
    const attacker = new InlineStanding(quick, budget);
    // The victim is demoted once (a collection at the wrong time); its cool-down ends.
    victim.demote();
    vi.setSystemTime(Date.now() + quick.cooldownMs);
    expect(victim.allowed).toBe(true);
    // Another tenant's overruns keep the budget empty: the victim, demoted lately, waits for it.
    attacker.demote();
    expect(victim.allowed).toBe(false);
    // Quiet for the longest cool-down after its own ended: forgotten, it runs inline again,
    // however empty the budget the other tenant keeps it.
    vi.setSystemTime(Date.now() + quick.maxCooldownMs);
    attacker.demote();
    expect(victim.allowed).toBe(true);
    // Demoted again, it is one demoted lately: after its cool-down, it waits for the budget again.
    victim.demote();
    vi.setSystemTime(Date.now() + quick.cooldownMs);
    expect(victim.allowed).toBe(false);
  });
});

describe("a developer's share of the main thread", () => {
  it("counts their deployments together: each under its own share, together past it, they are demoted", () => {
    const budget = new InlineOverrunBudget(DEFAULT_INLINE_POLICY);
    const developers = new ShareWindow(DEFAULT_INLINE_POLICY.windowMs);
    const mine = [1, 2, 3].map(() => new InlineStanding(DEFAULT_INLINE_POLICY, budget, () => developers));
    const other = new InlineStanding(DEFAULT_INLINE_POLICY, budget, () => new ShareWindow(1000));
    const third = BigInt(DEFAULT_INLINE_POLICY.shareMs) * 400_000n; // 40% of a share each
    expect(mine[0]?.charge(third)).toBe(false);
    // The light tenant's turn order sees the developer's CPU, not the deployment's alone.
    expect(mine[1]?.recentNs).toBe(Number(third));
    expect(mine[1]?.charge(third)).toBe(false);
    expect(mine[2]?.charge(third)).toBe(true);
    expect(mine[2]?.allowed).toBe(false);
    // Their other deployments charging in the same window go too; another developer's stays.
    expect(mine[0]?.charge(1n)).toBe(true);
    expect(other.charge(third)).toBe(false);
    expect(other.allowed).toBe(true);
  });
});
