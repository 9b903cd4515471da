/**
 * Deploys, imports, deletes and settings changes under a lifecycle lock whose connection was lost (two
 * hosts on a private server). Each reads the deployment's record under the lock and writes what
 * it made of it; the server ends the lock's backend meanwhile, and another host takes the lock and
 * changes the deployment. The first host's write must not land over that change: its fence
 * refuses it (`unavailable`, nothing written), and a retry starts from the other host's change.
 */
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import type { LockFence } from "../host/db/index.js";
import { LOCK_LOST } from "../host/db/kv/index.js";
import { advisoryKey } from "../host/db/kv/postgres-locks.js";
import type { DeploymentRecord } from "../host/deployments/records.js";
import type { DeploymentScopedState } from "../host/deployments/removal.js";
import { deferred } from "./helpers/deferred.js";
import { exportZip, importZip } from "./helpers/export-import.js";
import { sourceCode, type TestHost } from "./helpers/host.js";
import { endLockBackend, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";
import { twoHostsForThisFile } from "./helpers/two-hosts.js";

const server = postgresForThisFile("Lifecycle lock fence tests");
let a: TestHost;
let b: TestHost;
twoHostsForThisFile(server, (first, second) => {
  a = first;
  b = second;
});

/** A capsule whose query `label` answers `label` and its env value COLOR. */
const labelled = (label: string) =>
  sourceCode(`import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { notes: table({ text: string() }) },
  queries: { label: async (ctx) => ${JSON.stringify(label)} + ":" + (ctx.env.COLOR ?? "") },
});
`);

/** What query `label` of deployment `id` answers on `host`. */
async function label(host: TestHost, id: string): Promise<string> {
  const answer = await host.call(id, "query", "label");
  expect(answer.status, answer.text()).toBe(200);
  return answer.json<{ value: string }>().value;
}

/** Runs `sql` on the test server as an administrator would. */
async function asAdmin<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<R[]> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    return (await admin.query<R>(sql, values)).rows;
  } finally {
    await admin.end();
  }
}

/** Ends the backend holding deployment `id`'s lifecycle lock (the hosts' store is `platform_kv`). */
const endLifecycleBackend = (id: string) =>
  endLockBackend(server, "platform_kv", `deployment-lifecycle:${id}`);

/** Deployment `id`'s record as `host` reads it. */
const recordOn = (host: TestHost, id: string): Promise<DeploymentRecord> => host.deployments.require(id);

/** A deploy or import refused for its lost lock: `unavailable`, to retry. */
function expectRefused(answer: HttpResponse): void {
  expect(answer.status, answer.text()).toBe(503);
  expect(answer.json<{ error: { code: string } }>().error.code).toBe("unavailable");
  expect(answer.headers["retry-after"]).toBe("1");
}

/**
 * Host A's `stale` change of deployment `id` (a deploy, an import) reads its record under the
 * lifecycle lock, then waits for the deployment's write lock, which A holds meanwhile; the lock's
 * backend is ended, and host B's `fresh` change takes the lifecycle lock and queues for the write
 * lock first. Both answers, once A lets the write lock go: B's change goes first.
 */
async function onLostLock(
  id: string,
  stale: () => Promise<HttpResponse>,
  fresh: () => Promise<HttpResponse>,
): Promise<[HttpResponse, HttpResponse]> {
  const deployment = await a.database.deployment(id);
  const released = deferred();
  const held = deferred();
  const blocker = deployment.exclusive(async () => {
    held.resolve();
    await released.promise;
  });
  try {
    await held.promise;
    const staleAnswer = stale();
    await vi.waitFor(() => expect(deployment.lock.contended).toBe(true), { timeout: 30_000, interval: 20 });
    await endLifecycleBackend(id);
    const freshAnswer = fresh();
    // B waits on the server for the write lock A holds (not for the lifecycle lock, which the
    // ended backend may hold for a moment yet: an advisory lock's key is in classid and objid).
    const key = BigInt.asUintN(64, advisoryKey("platform_kv", `deployment:${id}`));
    await vi.waitFor(
      async () =>
        expect(
          await asAdmin(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1::oid AND objid = $2::oid AND objsubid = 1",
            [String(key >> 32n), String(key & 0xffffffffn)],
          ),
        ).not.toHaveLength(0),
      { timeout: 30_000, interval: 20 },
    );
    released.resolve();
    await blocker;
    return await Promise.all([staleAnswer, freshAnswer]);
  } finally {
    released.resolve();
    await blocker;
  }
}

describe.skipIf(!postgresInstalled)("deployment lifecycle under a lost lock", () => {
  it("refuses a deploy's switch once its lifecycle lock was lost: another host's deploy in between keeps its code and env", async () => {
    expect((await a.deployCode("life", await labelled("one"))).status).toBe(201);
    const [stale, fresh] = await onLostLock(
      "life",
      async () => a.deployCode("life", await labelled("two")),
      async () => b.deployCode("life", await labelled("three"), { COLOR: "b" }),
    );
    expect(fresh.status, fresh.text()).toBe(200);
    // A's record was made from the one before B's deploy: it would have undone it.
    expectRefused(stale);
    expect(await label(b, "life")).toBe("three:b");
    await vi.waitFor(async () => expect(await label(a, "life")).toBe("three:b"), { timeout: 10_000 });
    // A retry starts from B's deploy: its env is kept.
    expect((await a.deployCode("life", await labelled("two"))).status).toBe(200);
    expect(await label(a, "life")).toBe("two:b");
    await vi.waitFor(async () => expect(await label(b, "life")).toBe("two:b"), { timeout: 10_000 });
  }, 120_000);

  it("refuses an import's commit once its lifecycle lock was lost: another host's deploy in between keeps its code and env", async () => {
    expect((await a.deployCode("moved", await labelled("one"))).status).toBe(201);
    const archive = await exportZip(a, "moved");
    expect(archive.status).toBe(200);
    const [stale, fresh] = await onLostLock(
      "moved",
      async () => importZip(a, "moved", archive.body),
      async () => b.deployCode("moved", await labelled("three"), { COLOR: "b" }),
    );
    expect(fresh.status, fresh.text()).toBe(200);
    expectRefused(stale);
    expect(await label(b, "moved")).toBe("three:b");
    await vi.waitFor(async () => expect(await label(a, "moved")).toBe("three:b"), { timeout: 10_000 });
  }, 120_000);

  it("refuses a settings change once its lifecycle lock was lost: another host's change in between stands", async () => {
    expect((await a.deployCode("settled", await labelled("one"))).status).toBe(201);
    const checked = await recordOn(a, "settled");
    const stale = a.deployments.updateSettings(checked, { restricted: false, approved: [] }, async () => {
      await endLifecycleBackend("settled");
      const patched = await b.admin("/v1/deploys/settled", "PATCH", {
        restricted: true,
        approved: ["ada@example.com"],
      });
      expect(patched.status, patched.text()).toBe(200);
    });
    await expect(stale).rejects.toMatchObject({ code: "unavailable" });
    const stored = await recordOn(b, "settled");
    expect(stored).toMatchObject({ restricted: true, approved: ["ada@example.com"] });
    expect((await b.call("settled", "query", "label")).status).toBe(401);
  }, 120_000);

  it("writes nothing of a delete's purges once its lifecycle lock was lost: sessions and web client files stay", async () => {
    const deployed = await a.admin("/v1/deploys/purged", "PUT", {
      code: await labelled("one"),
      client: [
        { path: "index.html", data: Buffer.from("<!doctype html><title>app</title>").toString("base64") },
      ],
    });
    expect(deployed.status, deployed.text()).toBe(201);
    const guest = await sendRequest(`${a.deploymentUrl("purged")}/__platform/auth/guest`, { method: "POST" });
    const { token } = guest.json<{ token: string }>();
    // The fence of a lifecycle lock let go of, as a delete's is once its connection was lost.
    let stale: LockFence | undefined;
    await a.database.exclusive("deployment-lifecycle:purged", async (fence) => {
      stale = fence;
    });
    // Let go of on the server once taken again (a lock's end is sent, not waited for).
    await a.database.exclusive("deployment-lifecycle:purged", async () => {});
    // Every state a delete purges: objects, sessions, web client files, and code caches (files on
    // this host's own disk, nothing of the database's).
    const states = (a.deployments as unknown as { removals: { states: DeploymentScopedState[] } }).removals
      .states;
    const outcomes = await Promise.allSettled(
      states.map((state) => state.purgeDeployment("purged", "", stale)),
    );
    const refused = outcomes.filter(
      (outcome) =>
        outcome.status === "rejected" && (outcome.reason as { cause?: unknown }).cause === LOCK_LOST,
    );
    expect(states).toHaveLength(4);
    expect(refused).toHaveLength(3);
    await expect(a.auth.authenticate("purged", token)).resolves.toBeDefined();
    expect((await sendRequest(`${a.deploymentUrl("purged")}/index.html`)).status).toBe(200);
  }, 120_000);

  it("refuses a delete once its lifecycle lock was lost: the deployment another host deployed in between is kept", async () => {
    expect((await a.deployCode("kept", await labelled("one"))).status).toBe(201);
    const stale = a.deployments.remove(await recordOn(a, "kept"), async () => {
      await endLifecycleBackend("kept");
      expect((await b.deployCode("kept", await labelled("two"), { COLOR: "b" })).status).toBe(200);
    });
    await expect(stale).rejects.toMatchObject({ code: "unavailable" });
    expect(await label(b, "kept")).toBe("two:b");
    await vi.waitFor(async () => expect(await label(a, "kept")).toBe("two:b"), { timeout: 10_000 });
    // Deleted for real once asked again, under a lock held throughout.
    expect((await a.admin("/v1/deploys/kept", "DELETE")).status).toBe(204);
    await vi.waitFor(async () => expect((await b.call("kept", "query", "label")).status).toBe(404), {
      timeout: 10_000,
    });
  }, 120_000);
});
