/**
 * Deployment records across hosts on one PostgreSQL database: each host caches them (the call path
 * reads only its cache, access settings included), so every change must reach the others. A
 * change is announced in the write that makes it, and a broadcast failing afterwards (what the
 * review made fail: a stub of A's bus, as a connection lost after the write would) loses nothing.
 */
import { describe, expect, it, vi } from "vitest";
import { HostDatabase, type HostMessage } from "../host/db/index.js";
import type { DeploymentRecord, RemovalRecord } from "../host/deployments/records.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";
import { twoHostsForThisFile } from "./helpers/two-hosts.js";

const server = postgresForThisFile("Deployment announcements across hosts");
let a: TestHost;
let b: TestHost;

const labelled = (label: string) => `import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { notes: table({ text: string() }) },
  queries: { label: async () => ${JSON.stringify(label)} },
});
`;

twoHostsForThisFile(server, (first, second) => {
  a = first;
  b = second;
});

/** An anonymous call of query `label` of deployment `id` on `host`. */
const label = (host: TestHost, id: string) => host.call(id, "query", "label");

/**
 * Makes host `host`'s broadcasts fail as a connection lost after its write would: the `times`
 * first (all of them when undefined). Returns what puts the bus back.
 */
function failBroadcasts(host: TestHost, times?: number): () => void {
  const bus = host.database.store.bus as { broadcast(message: string): Promise<void> };
  const real = bus.broadcast;
  let failed = 0;
  bus.broadcast = async (message) => {
    if (times === undefined || failed++ < times) throw new Error("Connection terminated unexpectedly");
    return real.call(bus, message);
  };
  return () => {
    bus.broadcast = real;
  };
}

describe.skipIf(!postgresInstalled)("deployment records on two hosts", () => {
  it("a deployment restricted through host A is refused on host B once the change commits, though A's broadcast fails", async () => {
    expect((await a.deployCode("settings", await sourceCode(labelled("open")))).status).toBe(201);
    // B caches the record (an anonymous call).
    expect((await label(b, "settings")).status).toBe(200);
    const restore = failBroadcasts(a, 1);
    try {
      const patched = await a.admin("/v1/deploys/settings", "PATCH", {
        restricted: true,
        approved: ["x@example.com"],
      });
      expect(patched.status, patched.text()).toBe(200);
      expect((await label(a, "settings")).status).toBe(401);
      // Heard with the write, not at B's next check of the records (a period later).
      await vi.waitFor(async () => expect((await label(b, "settings")).status).toBe(401), {
        timeout: 5000,
        interval: 50,
      });
    } finally {
      restore();
    }
  }, 60_000);

  it("a deploy through host A whose broadcasts fail after its switch is answered as done, and host B serves it", async () => {
    expect((await a.deployCode("switched", await sourceCode(labelled("one")))).status).toBe(201);
    expect((await label(b, "switched")).json<{ value: string }>().value).toBe("one");
    const restore = failBroadcasts(a);
    try {
      const deployed = await a.deployCode("switched", await sourceCode(labelled("two")));
      expect(deployed.status, deployed.text()).toBe(200);
    } finally {
      restore();
    }
    expect((await label(a, "switched")).json<{ value: string }>().value).toBe("two");
    await vi.waitFor(
      async () => expect((await label(b, "switched")).json<{ value: string }>().value).toBe("two"),
      { timeout: 5000, interval: 50 },
    );
  }, 60_000);

  it("a removal a crashed host left unfinished and unannounced is announced by the host that finishes it", async () => {
    expect((await a.deployCode("leftover", await sourceCode(labelled("kept")))).status).toBe(201);
    expect((await label(b, "leftover")).status).toBe(200);
    // A host (of an earlier version, which announced after its batch) hid the deployment and
    // marked its removal, then crashed before it said so: B still serves it from its cache.
    const crashed = await HostDatabase.open(server.url);
    try {
      const record = await crashed.records<DeploymentRecord>("deployments").get("leftover");
      const marker: RemovalRecord = {
        id: "leftover",
        incarnation: record?.incarnation ?? null,
        owner: record?.owner ?? null,
        quotaOwner: record?.owner ?? "dev:leftover",
        startedAt: Date.now(),
      };
      await crashed.store.batch([
        {
          type: "put",
          key: crashed.records("deployment-removals").key("leftover"),
          value: JSON.stringify(marker),
        },
        { type: "del", key: crashed.records("deployments").key("leftover") },
      ]);
    } finally {
      await crashed.close();
    }
    expect((await label(b, "leftover")).status).toBe(200);
    // A host starting finishes the removal, and tells the others.
    const c = await startTestHost({ database: server.url, requestQuota: false });
    try {
      await vi.waitFor(async () => expect((await label(b, "leftover")).status).toBe(404), {
        timeout: 5000,
        interval: 50,
      });
    } finally {
      await c.dispose();
    }
  }, 60_000);

  it("a settings change whose announcement host B never hears reaches B at its next check of the records", async () => {
    expect((await a.deployCode("unheard", await sourceCode(labelled("open")))).status).toBe(201);
    expect((await label(b, "unheard")).status).toBe(200);
    // B hears nothing of the deployment (as in live-redeploy.test.ts): lost wherever it was lost.
    const database = b.database as unknown as { receive(message: HostMessage): Promise<void> };
    const receive = database.receive.bind(b.database);
    database.receive = async (message) => {
      if (message.type !== "deployment" || message.id !== "unheard") await receive(message);
    };
    try {
      const patched = await a.admin("/v1/deploys/unheard", "PATCH", { restricted: true });
      expect(patched.status, patched.text()).toBe(200);
      expect((await label(a, "unheard")).status).toBe(401);
      // Within LIMITS.deploymentRecordCheckMs (15 s) and a read; waited for generously.
      await vi.waitFor(async () => expect((await label(b, "unheard")).status).toBe(401), {
        timeout: 4 * LIMITS.deploymentRecordCheckMs,
        interval: 200,
      });
    } finally {
      database.receive = receive;
    }
  }, 120_000);
});
