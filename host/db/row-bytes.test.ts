/**
 * The row storage quota on classic-level: the shared suite (test/helpers/row-quota-suite.ts, which
 * PostgreSQL runs too), then how the total lives with the store: read back after a reopen and a
 * kill, counted once for a deployment stored before it existed (the same number the writes kept),
 * moved by migrations, legacy rows and rows older than a hidden index, freed with the deployment,
 * and checked for imports.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LegacyWrite } from "../../sdk/protocol/index.js";
import type { SchemaSpec } from "../../sdk/values/index.js";
import {
  expectExact,
  insertOne,
  QUOTA_SCHEMA,
  rowIds,
  rowQuotaSuite,
  storedRowBytes,
  tallyRowBytes,
  WIDER_SCHEMA,
} from "../../test/helpers/row-quota-suite.js";
import { afterPrefix } from "./codec.js";
import {
  type DeploymentData,
  HostDatabase,
  newRowId,
  readDataHead,
  type TenantDatabase,
  tableRows,
} from "./index.js";
import { deploymentPrefixes, metaKey } from "./keys.js";
import { collect } from "./kv/index.js";

/** A temporary classic-level database whose deployments may store `limit` row bytes each. */
async function tempQuotaDatabase(limit: number) {
  const dir = await mkdtemp(join(tmpdir(), "platform-quota-"));
  const env = {
    dir,
    db: await HostDatabase.open(dir, { rowBytesPerDeployment: limit }),
    /** Closes the database and opens it again, as a restarted host does. */
    reopen: async () => {
      await env.db.close();
      env.db = await HostDatabase.open(dir, { rowBytesPerDeployment: limit });
      return env.db;
    },
    dispose: async () => {
      await env.db.close().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
  return env;
}

rowQuotaSuite("classic-level", tempQuotaDatabase, 25);

let env: Awaited<ReturnType<typeof tempQuotaDatabase>>;

/** Forgets the stored total, as a deployment stored before it existed has none. */
async function forgetTotal(deployment: TenantDatabase): Promise<void> {
  await deployment.store.batch([{ type: "del", key: metaKey(deployment.id, "rowBytes") }]);
}

/** Runs test/helpers/crash-writer.ts on `dir` and kills it `killAfterMs` after its first commit. */
function writeUntilKilled(dir: string, killAfterMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/crash-writer.ts", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on("data", () => {
      timer ??= setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("exit", (_code, signal) => {
      clearTimeout(timer);
      if (signal === "SIGKILL") resolve();
      else reject(new Error(`writer exited without being killed: ${stderr}`));
    });
  });
}

/** Deployment `id`'s database as an export reads it (host/transfer). */
async function exportData(deployment: TenantDatabase): Promise<DeploymentData> {
  const snapshot = await deployment.store.snapshot();
  try {
    const head = await readDataHead(snapshot, deployment.id);
    const tables = new Map<string, string[]>();
    for (const name of Object.keys(head.schema.tables)) {
      const rows: string[] = [];
      for await (const batch of tableRows(snapshot, deployment.id, name)) rows.push(...batch);
      tables.set(name, rows);
    }
    return { ...head, tables };
  } finally {
    await snapshot.close();
  }
}

describe("row bytes", () => {
  afterEach(() => env.dispose());

  it("survive a close and reopen: stored with the rows, read back without counting again", async () => {
    env = await tempQuotaDatabase(4000);
    const deployment = await env.db.deployment("kept");
    await deployment.migrate(QUOTA_SCHEMA);
    for (let i = 0; i < 4; i++) await insertOne(deployment, "x".repeat(100), i);
    const used = await expectExact(deployment);
    expect(deployment.rowBytes.known).toBe(used);

    const reopened = await (await env.reopen()).deployment("kept");
    expect(reopened.rowBytes.known).toBe(used);
    // The limit still holds where it held before.
    let refused: unknown;
    for (let i = 0; i < 20 && refused === undefined; i++)
      await insertOne(reopened, "x".repeat(100), i).catch((error: unknown) => {
        refused = error;
      });
    expect(refused).toMatchObject({ code: "quota_exceeded" });
    expect(await expectExact(reopened)).toBeLessThanOrEqual(4000);
  });

  it("are exact after the writing process is killed at random moments", async () => {
    env = await tempQuotaDatabase(1024 * 1024 * 1024);
    await env.db.close();
    for (const killAfterMs of [150, 400, 250]) {
      await writeUntilKilled(env.dir, killAfterMs);
      const db = await HostDatabase.open(env.dir);
      try {
        const deployment = await db.deployment("crash");
        expect(await storedRowBytes(deployment)).toBeGreaterThan(0);
        await expectExact(deployment);
      } finally {
        await db.close();
      }
    }
    env.db = await HostDatabase.open(env.dir);
  }, 60_000);

  it("of a deployment stored before they existed are counted once, the number its writes keep", async () => {
    env = await tempQuotaDatabase(1024 * 1024);
    const deployment = await env.db.deployment("old");
    await deployment.migrate(QUOTA_SCHEMA);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await insertOne(deployment, "ä".repeat(i * 7), i % 4));
    await deployment.mutate(async (tx) => {
      for (const id of ids.slice(0, 10)) await tx.update("t", id, { text: "patched", n: null });
      for (const id of ids.slice(10, 15)) await tx.delete("t", id);
    });
    const kept = await storedRowBytes(deployment);

    // Without a stored total, the first mutation counts it from the store (and stores it) first.
    await forgetTotal(deployment);
    let reopened = await (await env.reopen()).deployment("old");
    expect(reopened.rowBytes.known).toBeUndefined();
    await reopened.mutate(() => {});
    expect(await storedRowBytes(reopened)).toBe(kept);
    expect(reopened.rowBytes.known).toBe(kept);
    await insertOne(reopened, "after");
    await expectExact(reopened);

    // ...or the first migration, before it moves the total by what it builds.
    await forgetTotal(reopened);
    reopened = await (await env.reopen()).deployment("old");
    await reopened.migrate(WIDER_SCHEMA);
    await expectExact(reopened);
  });

  it("move with migrations: a built index adds its entries, a dropped one frees them, a removed table had none", async () => {
    env = await tempQuotaDatabase(1024 * 1024);
    const deployment = await env.db.deployment("schema");
    await deployment.migrate(QUOTA_SCHEMA);
    for (let i = 0; i < 10; i++) await insertOne(deployment, `row ${i}`, i);
    const narrow = await expectExact(deployment);
    await deployment.migrate(WIDER_SCHEMA);
    const wide = await expectExact(deployment);
    expect(wide).toBeGreaterThan(narrow);
    await deployment.migrate(QUOTA_SCHEMA);
    expect(await expectExact(deployment)).toBe(narrow);

    const withOther: SchemaSpec = {
      tables: {
        ...QUOTA_SCHEMA.tables,
        other: { fields: { text: { kind: "string", optional: false } }, indexes: { by_text: ["text"] } },
      },
    };
    await deployment.migrate(withOther);
    const { value: otherIds } = await deployment.mutate(async (tx) => [
      await tx.insert("other", { text: "one" }),
      await tx.insert("other", { text: "two" }),
    ]);
    expect(await expectExact(deployment)).toBeGreaterThan(narrow);
    await deployment.mutate(async (tx) => {
      for (const id of otherIds) await tx.delete("other", id);
    });
    await deployment.migrate(QUOTA_SCHEMA);
    expect(await expectExact(deployment)).toBe(narrow);
  });

  it("go with the deployment: deleting it leaves no total, and a new one of the same id starts at nothing", async () => {
    env = await tempQuotaDatabase(4000);
    const deployment = await env.db.deployment("doomed");
    await deployment.migrate(QUOTA_SCHEMA);
    let fitted = 0;
    for (let i = 0; i < 100 && fitted === i; i++)
      await insertOne(deployment, "x".repeat(100), 1).then(
        () => fitted++,
        () => {},
      );
    expect(await storedRowBytes(deployment)).toBeGreaterThan(3000);

    // What host/deployments/removal.ts calls to remove a deployment's data.
    await env.db.dropDeployment("doomed");
    for (const prefix of deploymentPrefixes("doomed"))
      expect(await collect(env.db.store.iterate({ gte: prefix, lt: afterPrefix(prefix) }))).toEqual([]);

    const again = await env.db.deployment("doomed");
    await again.migrate(QUOTA_SCHEMA);
    expect(await expectExact(again)).toBe(0);
    // The old deployment's bytes would have refused these.
    for (let i = 0; i < Math.min(fitted, 3); i++) await insertOne(again, "x".repeat(100), 1);
    await expectExact(again);
  });

  it("count legacy rows as stored and their entries in v1 form, through an upgrade to v1", async () => {
    env = await tempQuotaDatabase(1024 * 1024);
    const deployment = await env.db.deployment("legacy");
    await deployment.migrate(QUOTA_SCHEMA, undefined, { legacy: true });
    const ids = Array.from({ length: 5 }, () => newRowId());
    const legacyWrites = (writes: LegacyWrite[], issued: string[] = []) =>
      deployment.mutate((tx) => tx.applyLegacyWrites(writes, new Set(issued)));
    await legacyWrites(
      ids.map((id, i) => ({
        op: "insert",
        table: "t",
        row: { id, createdAt: "", text: `legacy ${i}`, n: i },
      })),
      ids,
    );
    await legacyWrites([
      { op: "update", table: "t", id: ids[0]!, patch: { text: "legacy, patched" } },
      { op: "delete", table: "t", id: ids[4]! },
    ]);
    expect(await storedRowBytes(deployment)).toBeGreaterThan(0);
    await expectExact(deployment);

    // v1 builds the indexes: the entries of legacy rows hold them with a numeric createdAt.
    await deployment.migrate(QUOTA_SCHEMA);
    await expectExact(deployment);
    await deployment.mutate((tx) => tx.update("t", ids[1]!, { text: "v1 now" }));
    await deployment.mutate((tx) => tx.delete("t", ids[2]!));
    await deployment.mutate((tx) => {
      expect(tx.tryUpdateSync("t", ids[3]!, { n: 42 })).toBe(true);
    });
    await expectExact(deployment);
  });

  it("count the hidden-index entries that rows created before a userId() conversion lack", async () => {
    env = await tempQuotaDatabase(1024 * 1024);
    const deployment = await env.db.deployment("converted");
    const owned = (kind: "string" | "userId"): SchemaSpec => ({
      tables: {
        t: {
          fields: { text: { kind: "string", optional: false }, owner: { kind, optional: false } },
          indexes: {},
        },
      },
    });
    await deployment.migrate(owned("string"));
    const { value: early } = await deployment.mutate(async (tx) => {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++)
        ids.push(await tx.insert("t", { text: `early ${i}`, owner: `guest:${i % 2}` }));
      return ids;
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    // The hidden index is not backfilled for rows created before the conversion.
    await deployment.migrate(owned("userId"));
    expect(deployment.schema.tables.t!.indexes["$user:owner"]!.notBefore).toBeDefined();
    await expectExact(deployment);

    // Written again, an early row gets its entry; its bytes before had none. Fast path and not.
    await deployment.mutate((tx) => {
      expect(tx.tryUpdateSync("t", early[0]!, { text: "again" })).toBe(true);
      expect(tx.tryDeleteSync("t", early[1]!)).toBe(true);
    });
    await expectExact(deployment);
    await deployment.mutate(async (tx) => {
      await tx.update("t", early[2]!, { text: "again, slowly" });
      await tx.delete("t", early[3]!);
      // Now with its entry.
      await tx.update("t", early[0]!, { text: "and again" });
    });
    await expectExact(deployment);
    await deployment.mutate((tx) => tx.insert("t", { text: "late", owner: "guest:0" }));
    // A guest upgrade moves the rows its hidden index finds (early ones written again, late ones).
    const { value: moved } = await deployment.mutate((tx) =>
      tx.reassignUserId("t", "owner", "guest:0", "user:9"),
    );
    expect(moved).toBe(3);
    await expectExact(deployment);
  });

  it("never get a guest upgrade's move of rows refused, while the writes of its hook are", async () => {
    env = await tempQuotaDatabase(3000);
    const deployment = await env.db.deployment("upgrade");
    await deployment.migrate({
      tables: {
        t: {
          fields: { text: { kind: "string", optional: false }, owner: { kind: "userId", optional: false } },
          indexes: {},
        },
      },
    });
    for (let i = 0; i < 20; i++)
      await deployment
        .mutate((tx) => tx.insert("t", { text: "g".repeat(100), owner: "guest:1" }))
        .catch(() => {});
    const full = await expectExact(deployment);
    const account = `user:${"a".repeat(40)}`;
    // The hook's insert would add bytes: refused with the move, nothing of either written.
    await expect(
      deployment.mutate(async (tx) => {
        await tx.reassignUserId("t", "owner", "guest:1", account);
        await tx.insert("t", { text: "hook", owner: account });
      }),
    ).rejects.toMatchObject({ code: "quota_exceeded" });
    expect(await expectExact(deployment)).toBe(full);
    // The move alone takes the rows past the limit (longer ids) and goes through.
    const { value: moved } = await deployment.mutate((tx) =>
      tx.reassignUserId("t", "owner", "guest:1", account),
    );
    expect(moved).toBeGreaterThan(0);
    expect(await expectExact(deployment)).toBeGreaterThan(3000);
  });

  it("refuse an import whose rows would pass the limit, keeping what the deployment holds", async () => {
    env = await tempQuotaDatabase(4000);
    const source = await tempQuotaDatabase(1024 * 1024);
    try {
      const big = await source.db.deployment("big");
      await big.migrate(QUOTA_SCHEMA);
      for (let i = 0; i < 20; i++) await insertOne(big, "x".repeat(100), i);
      const small = await source.db.deployment("small");
      await small.migrate(QUOTA_SCHEMA);
      for (let i = 0; i < 3; i++) await insertOne(small, "y".repeat(100), i);

      const target = await env.db.deployment("target");
      await target.migrate(QUOTA_SCHEMA);
      await insertOne(target, "before");
      const before = await rowIds(target);
      const held = await expectExact(target);
      await expect(target.replaceData(await exportData(big), async () => [])).rejects.toMatchObject({
        code: "quota_exceeded",
        message: expect.stringMatching(
          /^The archive's rows take [\d.]+ KiB with their index entries, past this deployment's limit of 3\.91 KiB; /,
        ),
      });
      expect(await rowIds(target)).toEqual(before);
      expect(await expectExact(target)).toBe(held);

      await target.replaceData(await exportData(small), async () => []);
      expect(await expectExact(target)).toBe(await tallyRowBytes(small));
      expect(target.rowBytes.known).toBe(await tallyRowBytes(small));
    } finally {
      await source.dispose();
    }
  });
});
