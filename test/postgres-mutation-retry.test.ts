/**
 * A mutation whose commit is refused because its write lock's connection was lost (two hosts on a
 * private server): its fence made sure nothing of it was written, so the host runs it again under
 * the lock taken anew, and the caller gets its answer rather than `503`. The other host's
 * mutation, made while the lock was lost, stands: the second run reads it.
 */
import { describe, expect, it } from "vitest";
import type { TenantDatabase } from "../host/db/index.js";
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
 * only; answers how many runs began.
 */
function beforeFirstRun(database: TenantDatabase, meanwhile: () => Promise<void>): () => number {
  const mutate = database.mutate.bind(database);
  let runs = 0;
  database.mutate = ((work, options) =>
    mutate(async (tx) => {
      if (++runs === 1) await meanwhile();
      return work(tx);
    }, options)) as TenantDatabase["mutate"];
  return () => runs;
}

describe.skipIf(!postgresInstalled)("a mutation refused for a lost write lock", () => {
  it("runs again under the lock taken anew: its caller gets the answer, and the other host's write stands", async () => {
    expect((await a.deployFixture("retried", "counter")).status).toBe(201);
    expect(await bump(a, "retried")).toBe(1);
    const runs = beforeFirstRun(await a.deployments.db.deployment("retried"), async () => {
      // A holds the write lock: its connection is ended, and B bumps meanwhile.
      await endLockBackend(server, "platform_kv", "deployment:retried");
      expect(await bump(b, "retried")).toBe(2);
    });
    expect(await bump(a, "retried")).toBe(3);
    expect(runs()).toBe(2);
    const value = await b.call("retried", "query", "value");
    expect(value.json<{ value: number }>().value).toBe(3);
  });
});
