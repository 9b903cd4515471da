/**
 * A mutation whose commit is refused because its write lock's connection was lost (two hosts on a
 * private server): its fence made sure nothing of it was written, so the host runs it again under
 * the lock taken anew, and the caller gets its answer rather than `503`. The other host's
 * mutation, made while the lock was lost, stands: the second run reads it. A sign-out's rewrite of
 * its session record, made in a transaction of the deployment, likewise.
 */
import { describe, expect, it } from "vitest";
import type { TenantDatabase } from "../host/db/index.js";
import { hostKey } from "../host/db/keys.js";
import type { TestHost } from "./helpers/host.js";
import { endLockBackend, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";
import { twoHostsForThisFile } from "./helpers/two-hosts.js";

const server = postgresForThisFile("Mutation retry tests");
let a: TestHost;
let b: TestHost;
twoHostsForThisFile(server, (first, second) => {
  a = first;
  b = second;
});

/** Bumps deployment `id`'s counter on `host` (fixtures/counter); answers the new value. */
async function bump(host: TestHost, id: string): Promise<number> {
  const answer = await host.call(id, "mutation", "bump");
  expect(answer.status, answer.text()).toBe(200);
  return answer.json<{ value: number }>().value;
}

/**
 * Makes `database`'s next mutation run `meanwhile` first, holding the write lock, in its first run
 * only, once its snapshot has begun (with a read): that run reads what was stored before
 * `meanwhile`. Answers how many runs began.
 */
function beforeFirstRun(database: TenantDatabase, meanwhile: () => Promise<void>): () => number {
  const mutate = database.mutate.bind(database);
  let runs = 0;
  database.mutate = ((work, options) =>
    mutate(async (tx) => {
      if (++runs === 1) {
        await tx.readKey(Buffer.from("begins the snapshot"));
        await meanwhile();
      }
      return work(tx);
    }, options)) as TenantDatabase["mutate"];
  return () => runs;
}

describe.skipIf(!postgresInstalled)("a mutation refused for a lost write lock", () => {
  it("runs again under the lock taken anew: its caller gets the answer, and the other host's write stands", async () => {
    expect((await a.deployFixture("retried", "counter")).status).toBe(201);
    expect(await bump(a, "retried")).toBe(1);
    const runs = beforeFirstRun(await a.deployments.db.deployment("retried"), async () => {
      // A holds the write lock, its snapshot begun with the counter at 1: the lock's connection is
      // ended, and B bumps meanwhile. A's first run then writes 2, refused; only a second run,
      // reading B's 2, answers 3.
      await endLockBackend(server, "platform_kv", "deployment:retried");
      expect(await bump(b, "retried")).toBe(2);
    });
    expect(await bump(a, "retried")).toBe(3);
    expect(runs()).toBe(2);
    const value = await b.call("retried", "query", "value");
    expect(value.json<{ value: number }>().value).toBe(3);
  });

  it("rewrites a host record (a sign-out's) again under the lock taken anew", async () => {
    expect((await a.deployFixture("rewritten", "counter")).status).toBe(201);
    const key = hostKey("test-rewrite:rewritten");
    const increment = (stored: string | null) => String(Number(stored ?? "0") + 1);
    await a.deployments.rewriteRecord("rewritten", key, increment);
    const runs = beforeFirstRun(await a.deployments.db.deployment("rewritten"), async () => {
      await endLockBackend(server, "platform_kv", "deployment:rewritten");
      await b.deployments.rewriteRecord("rewritten", key, increment);
    });
    await a.deployments.rewriteRecord("rewritten", key, increment);
    expect(runs()).toBe(2);
    let stored: string | null = null;
    await b.deployments.rewriteRecord("rewritten", key, (value) => {
      stored = value;
      return null;
    });
    expect(stored).toBe("3");
  });
});
