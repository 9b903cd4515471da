/**
 * The blank isolate a host makes ahead of a cold start: none while the host starts (start-up stays
 * lazy), one after a cold start, and the next cold start takes it instead of creating an isolate.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PlatformHost, startHost } from "../host/host.js";
import { type ColdStartPhase, traceColdStarts } from "../host/isolates/cold-start-trace.js";
import { InlineSentinel } from "../host/isolates/inline/index.js";
import { isPlatformError } from "../sdk/values/index.js";
import { fixtureCode } from "./helpers/host.js";

let dir: string;
let host: PlatformHost;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-spare-"));
  host = await startHost({
    data: dir,
    port: 0,
    domain: "localhost",
    adminToken: randomBytes(8).toString("hex"),
    logDestination: false,
  });
});

afterAll(async () => {
  traceColdStarts(null);
  await host.close();
  await rm(dir, { recursive: true, force: true });
});

/** The phases of the cold start that a call to `id` after evicting it makes. */
async function coldStartPhases(id: string): Promise<ColdStartPhase[]> {
  host.deployments.pool.runner(id, (await host.deployments.require(id)).artifact).evict();
  const phases: ColdStartPhase[] = [];
  traceColdStarts((phase) => phases.push(phase));
  try {
    await host.deployments.call(id, { kind: "query", name: "list", argsJson: "{}", identity: null });
  } finally {
    traceColdStarts(null);
  }
  return phases;
}

/** For each isolate the sentinel registers during a call to `id`: whether it was watched at once. */
async function watchedAtOnceDuring(id: string): Promise<boolean[]> {
  const sentinel = InlineSentinel.shared();
  const watchedAtOnce: boolean[] = [];
  const register = sentinel.register.bind(sentinel);
  sentinel.register = (...args) => {
    const slot = register(...args);
    watchedAtOnce.push(sentinel.watches(slot));
    return slot;
  };
  try {
    await host.deployments.call(id, { kind: "query", name: "list", argsJson: "{}", identity: null });
  } finally {
    sentinel.register = register;
  }
  return watchedAtOnce;
}

describe("the spare isolate", () => {
  it("is made after a cold start, not at start-up, and taken by the next cold start", async () => {
    const factory = host.deployments.pool.factory;
    expect(factory.spareReady).toBe(false);
    await host.deployments.deploy("todo", { code: await fixtureCode("todo") });
    for (let i = 0; i < 1000 && !factory.spareReady; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(factory.spareReady).toBe(true);
    const phases = await coldStartPhases("todo");
    expect(phases).toEqual(["artifact", "compile", "run"]);
    expect(factory.spareReady).toBe(false);
    for (let i = 0; i < 1000 && !factory.spareReady; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(factory.spareReady).toBe(true);
  });

  it("is watched by the inline sentinel already, so a cold start beside live isolates needs no new registry", async () => {
    const factory = host.deployments.pool.factory;
    const call = (id: string) =>
      host.deployments.call(id, { kind: "query", name: "list", argsJson: "{}", identity: null });
    // Beside a live neighbour, whose entries keep the sentinel ticking.
    await host.deployments.deploy("neighbour", { code: await fixtureCode("todo") });
    await call("neighbour");
    await host.deployments.pool.runner("todo", (await host.deployments.require("todo")).artifact).evict();
    const sentinel = InlineSentinel.shared();
    for (let i = 0; i < 1000 && !(factory.spareReady && sentinel.upToDate); i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(factory.spareReady && sentinel.upToDate).toBe(true);
    expect(await watchedAtOnceDuring("todo")).toEqual([true]);
  });

  it("is watched at once on a host with no other live isolate, where the sentinel held it asleep", async () => {
    const pool = host.deployments.pool;
    for (const id of ["neighbour", "todo"])
      await pool.runner(id, (await host.deployments.require(id)).artifact).evict();
    const sentinel = InlineSentinel.shared();
    for (
      let i = 0;
      i < 1000 && !(pool.liveCount() === 0 && pool.factory.spareReady && sentinel.upToDate);
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(pool.liveCount() === 0 && pool.factory.spareReady && sentinel.upToDate).toBe(true);
    // Asleep: the spare runs no entries, so the sentinel does not tick for it.
    const ticks = sentinel.ticks;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sentinel.ticks).toBe(ticks);
    expect(await watchedAtOnceDuring("todo")).toEqual([true]);
  });

  it("frees the isolate of a cold start that ends after its deployment was stopped, failing its call", async () => {
    await host.deployments.deploy("gone", { code: await fixtureCode("todo") });
    const runner = host.deployments.pool.runner("gone", (await host.deployments.require("gone")).artifact);
    await runner.evict();
    // The deployment is removed (as a delete does) while its cold start is under way.
    traceColdStarts((phase) => {
      if (phase === "artifact") host.deployments.pool.remove("gone");
    });
    const failure = await host.deployments
      .call("gone", { kind: "query", name: "list", argsJson: "{}", identity: null })
      .then(
        () => null,
        (error: unknown) => error,
      )
      .finally(() => traceColdStarts(null));
    expect(isPlatformError(failure, "unavailable")).toBe(true);
    expect(runner.isLive).toBe(false);
  });
});
