/**
 * On PostgreSQL, readers hold connections of a small pool, shared fairly between owners
 * (host/db/kv/owner-shares.ts). An owner is the developer, not the deployment: before, a developer
 * running handlers in many deployments at once got a share for each, and together they held every
 * connection while another developer's query waited. A mutation's snapshot is not held to a share:
 * it waits holding a write lock's connection. Real PostgreSQL, real deployments' queries.
 */
import { describe, expect, it } from "vitest";
import { HostDatabase, PostgresKv, type TenantDatabase } from "../host/db/index.js";
import { LOCKS_KEPT_FROM_TURNS } from "../host/db/kv/postgres-locks.js";
import { capsule, string, table } from "../sdk/server/index.js";
import { freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL share tests");

const SCHEMA = capsule({ schema: { notes: table({ s: string() }) } }).declaration.schema;
const INDEXED = capsule({ schema: { notes: table({ s: string() }).index("by_s", ["s"]) } }).declaration
  .schema;

describe.skipIf(!postgresInstalled)("PostgreSQL connections shared by developer", () => {
  it("gives one developer's deployments together one share, so another developer's query still runs", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    const db = await HostDatabase.openStore(store);
    // As the deployment layer does: each deployment's work is its developer's.
    db.shareOf = (id) => (id.startsWith("mallory-") ? "mallory" : id);
    const snapshots = () =>
      store.poolUse().find((use) => use.pool === "snapshots") as {
        max: number;
        idle: number;
        waiting: number;
      };
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    try {
      const deployments: TenantDatabase[] = [];
      for (let i = 0; i < 8; i++) {
        const deployment = await db.deployment(`mallory-${i}`);
        await deployment.migrate(SCHEMA);
        deployments.push(deployment);
      }
      const victim = await db.deployment("victim");
      await victim.migrate(SCHEMA);
      const { max } = snapshots();
      const share = Math.ceil(max / 4);
      const spare = Math.ceil(max / 16);
      // Handlers that read, then keep their snapshot (slow handlers), started one after another
      // (readers made together share one snapshot): more than the pool holds.
      let holding = 0;
      const slow: Array<Promise<unknown>> = [];
      for (let i = 0; i < max + 4; i++) {
        const waiting = snapshots().waiting;
        const held = holding;
        slow.push(
          (deployments[i % deployments.length] as TenantDatabase).query(async (tx) => {
            await tx.get("notes", "A".repeat(22));
            holding++;
            await gate;
          }),
        );
        while (holding === held && snapshots().waiting === waiting)
          await new Promise((resolve) => setTimeout(resolve, 5));
      }
      // One developer holds three quarters of the pool at most, however many deployments it runs.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(holding).toBe(max - share);
      // A mutation of mallory's is not held to the share: it waits under its write lock, holding a
      // lock connection, so mallory's deployments waiting to write would hold every one of the host's.
      await (deployments[1] as TenantDatabase).mutate((tx) => tx.insert("notes", { s: "written" }));
      // Any other read of mallory's (an export, a backup of theirs) is held to the share all the same.
      let readLater = false;
      const reading = db.store.snapshot("mallory").then((snapshot) => {
        readLater = true;
        return snapshot;
      });
      // Mallory's mutations that keep their snapshot (slow ones) go past the share, but not into
      // the connections kept for developers holding none.
      let writing = 0;
      const writes = deployments.slice(0, 7).map((deployment) =>
        deployment.mutate(async (tx) => {
          await tx.get("notes", "C".repeat(22));
          writing++;
          await gate;
          await tx.insert("notes", { s: "late" });
        }),
      );
      while (writing < share - spare || snapshots().waiting < 3)
        await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(writing).toBe(share - spare);
      expect(readLater).toBe(false);
      // Another developer's query runs now, not once mallory's handlers end.
      const answer = await victim.query((tx) => tx.get("notes", "B".repeat(22)));
      expect(answer.value).toBeNull();
      open();
      await Promise.all([...slow, ...writes]);
      expect([holding, writing]).toEqual([slow.length, writes.length]);
      await (await reading).close();
    } finally {
      open();
      await db.close();
    }
  }, 60_000);

  it("lets one developer's mutations hold at most three quarters of the lock connections, so another's writes go on", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    const db = await HostDatabase.openStore(store);
    db.shareOf = (id) => (id.startsWith("mallory-") ? "mallory" : id.startsWith("eve-") ? "eve" : id);
    const locks = () => store.poolUse().find((use) => use.pool === "locks") as { max: number };
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    try {
      const { max } = locks();
      const deployments: TenantDatabase[] = [];
      for (let i = 0; i < max; i++) {
        const deployment = await db.deployment(`mallory-${i}`);
        await deployment.migrate(SCHEMA);
        deployments.push(deployment);
      }
      const victim = await db.deployment("victim");
      await victim.migrate(SCHEMA);
      // A slow mutation in each of mallory's deployments: each holds its write lock, and with it a
      // lock connection, for as long as it runs. Before, they held every one of the host's.
      let holding = 0;
      const slow = deployments.map((deployment) =>
        deployment.mutate(async (tx) => {
          holding++;
          await gate;
          await tx.insert("notes", { s: "slow" });
        }),
      );
      // Turns share all but the connections kept for other locks.
      const places = max - LOCKS_KEPT_FROM_TURNS;
      const most = Math.floor((places * 3) / 4);
      while (holding < most) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(holding).toBe(most);
      // A second busy developer gets places too, but not the last 2, kept for developers holding none:
      // its first always, then more while more than 2 are free.
      const eveMost = 1 + Math.max(0, places - most - 1 - 2);
      let eveHolding = 0;
      const eves: Array<Promise<unknown>> = [];
      for (let i = 0; i < 3; i++) {
        const deployment = await db.deployment(`eve-${i}`);
        await deployment.migrate(SCHEMA);
        eves.push(
          deployment.mutate(async (tx) => {
            eveHolding++;
            await gate;
            await tx.insert("notes", { s: "eve" });
          }),
        );
      }
      while (eveHolding < eveMost) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(eveHolding).toBe(eveMost);
      // Another developer's write goes on meanwhile.
      const written = await victim.mutate((tx) => tx.insert("notes", { s: "mine" }));
      expect(typeof written.value).toBe("string");
      // A deploy of a deployment whose mutation waits its turn is not held up by it: the waiting
      // mutation holds nothing, not even the deployment's lock in this process (a deploy holds an
      // outer lock meanwhile, of which a host has 3).
      const migration = await (deployments.at(-1) as TenantDatabase).migrate(INDEXED);
      expect(migration.built).toEqual([{ table: "notes", index: "by_s", entries: 0 }]);
      // The deployment is deleted, and created anew under its id, while its mutation waits its turn:
      // the mutation fails, and writes nothing into the new one.
      const id = `mallory-${max - 1}`;
      db.forget(id);
      await db.dropDeployment(id);
      const anew = await db.deployment(id);
      await anew.migrate(SCHEMA);
      open();
      const settled = await Promise.allSettled(slow);
      expect(await Promise.all(eves)).toHaveLength(3);
      expect(settled.at(-1)).toMatchObject({ status: "rejected", reason: { code: "not_found" } });
      expect(settled.slice(0, -1).every((each) => each.status === "fulfilled")).toBe(true);
      const rows = await anew.query(async (tx) => {
        const outcome = await tx.query(
          { table: "notes", index: "by_creation", range: [], order: "asc" },
          { kind: "count" },
        );
        return outcome.kind === "count" ? outcome.count : -1;
      });
      expect(rows.value).toBe(0);
      expect(holding).toBe(max - 1);
    } finally {
      open();
      await db.close();
    }
  }, 60_000);
});
