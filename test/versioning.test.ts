/**
 * Versioning (docs/capsules.md "Versioning"): a legacy capsule (database API v0) runs on the snapshot
 * runtime; `platform migrate` rewrites it to v1; redeploying keeps every stored row byte for byte,
 * backfills the indexes and answers every query the same, with lower budget figures; an immutable
 * legacy artifact keeps running on this platform and across restarts; a failed upgrade leaves it
 * serving.
 */
import { createHash } from "node:crypto";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { collect } from "../host/db/index.js";
import { runCliAsync } from "./helpers/cli.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
});
afterAll(() => host.dispose());

type Row = Record<string, unknown> & { id: string; createdAt: string | number };

const call = async (deployment: string, kind: "query" | "mutation", name: string, args: unknown = {}) => {
  const result = await host.deployments.call(deployment, {
    kind,
    name,
    argsJson: JSON.stringify(args),
    identity: null,
  });
  return { value: JSON.parse(result.valueJson) as unknown, usage: result.usage };
};

/** Every stored row of a deployment's table, as key and value bytes. */
async function rawRows(deployment: string, table: string): Promise<Array<[string, string]>> {
  const database = await host.deployments.db.deployment(deployment);
  const prefix = database.tables.get(table)?.rowPrefix as Buffer;
  const entries = await collect(
    database.store.iterate({ gte: prefix, lt: Buffer.concat([prefix, Buffer.from([0xff])]) }),
  );
  return entries.map(([key, value]) => [key.toString("hex"), value]);
}

/** A query answer with legacy ISO `createdAt` values in v1's number form (epoch ms). */
function inV1Form(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inV1Form);
  if (value && typeof value === "object") {
    const row = { ...(value as Row) };
    if (typeof row.createdAt === "string") row.createdAt = Date.parse(row.createdAt);
    return row;
  }
  return value;
}

describe("the legacy snapshot runtime", () => {
  it("runs a legacy capsule: synchronous handlers, positional mutations, rows shipped as reads", async () => {
    const deployed = await host.deployFixture("tasks", "legacy");
    expect(deployed.status, deployed.text()).toBe(201);
    expect(deployed.json()).toMatchObject({ apiVersion: 0 });
    const added = (await call("tasks", "mutation", "add", ["write docs", "tag1", 90])).value as Row;
    expect(added).toMatchObject({ title: "write docs", tag: "tag1", priority: 90, done: false });
    expect(typeof added.createdAt).toBe("string");
    expect(new Date(added.createdAt as string).toISOString()).toBe(added.createdAt);
    const stored = (await call("tasks", "query", "task", { id: added.id })).value as Row;
    expect(stored).toMatchObject({ id: added.id, title: "write docs" });
    expect((await call("tasks", "mutation", "finish", [added.id])).value).toBe(true);
    expect(((await call("tasks", "query", "latestDone")).value as Row).id).toBe(added.id);
    // Reading a table ships every row of it into the isolate: each one counts as read.
    const open = await call("tasks", "query", "open");
    expect(open.usage).toMatchObject({ rowsRead: 1, rowsReturned: 0 });
    // The legacy runtime keeps no index entries beyond the rows themselves.
    const database = await host.deployments.db.deployment("tasks");
    expect(database.legacy).toBe(true);
    expect(Object.values(database.schema.tables).every((t) => Object.keys(t.indexes).length === 0)).toBe(
      true,
    );
    // HTTP: a JSON array body is a legacy mutation's positional arguments.
    const http = await host.call("tasks", "mutation", "add", ["over http", "tag2", 5]);
    expect(http.json<{ value: Row }>().value).toMatchObject({ title: "over http", tag: "tag2" });
  });

  it("refuses userId() fields, upgrade hooks and replacing a v1 deployment, saying to move to v1", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-legacy-bad-"));
    try {
      await cp("fixtures/legacy", dir, { recursive: true });
      const file = join(dir, "server", "index.ts");
      const source = await readFile(file, "utf8");
      await writeFile(
        file,
        source
          .replace(
            "import { app, boolean, number, string }",
            "import { app, boolean, number, string, userId }",
          )
          .replace("done: boolean() },", "done: boolean(), owner: userId() },"),
      );
      const withUserId = await host.deployCode("bad-legacy", (await bundleCapsule(dir)).code);
      expect(withUserId.status).toBe(400);
      expect(withUserId.json<{ error: { message: string } }>().error.message).toBe(
        "Deploy failed: Legacy capsules cannot use userId() fields (tasks.owner): move the capsule to database API v1 (run `platform migrate` on it, then redeploy); the legacy API has neither.",
      );
      await writeFile(file, source.replace("schema: {", "auth: { onGuestUpgrade: () => {} },\n  schema: {"));
      const withHook = await host.deployCode("bad-legacy", (await bundleCapsule(dir)).code);
      expect(withHook.json<{ error: { message: string } }>().error.message).toContain(
        "Legacy capsules cannot use auth.onGuestUpgrade: move the capsule to database API v1",
      );
      expect((await host.deployFixture("modern", "todo")).status).toBe(201);
      const downgrade = await host.deployCode("modern", await fixtureCode("legacy"));
      expect(downgrade.json<{ error: { message: string } }>().error.message).toBe(
        "Deploy failed: This deployment serves database API v1; a legacy (v0) capsule cannot replace it.",
      );
      expect((await host.call("modern", "query", "list")).status).toBe(200);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("upgrading a legacy capsule with platform migrate", () => {
  it("keeps rows byte for byte, backfills indexes, answers the same, and reads far less", async () => {
    expect((await host.deployFixture("upgrade", "legacy")).status).toBe(201);
    for (let from = 0; from < 5000; from += 2500)
      expect((await call("upgrade", "mutation", "seed", [from, 2500])).value).toBe(2500);
    const before = await rawRows("upgrade", "tasks");
    expect(before).toHaveLength(5000);
    const someId = (JSON.parse(before[1234]?.[1] as string) as Row).id;
    const queries: Array<[string, unknown]> = [
      ["open", {}],
      ["byTag", { tag: "tag3" }],
      ["urgent", {}],
      ["task", { id: someId }],
      ["latestDone", {}],
      ["doneInTag", { tag: "tag7" }],
    ];
    const legacy = new Map<string, { value: unknown; rowsRead: number }>();
    for (const [name, args] of queries) {
      const { value, usage } = await call("upgrade", "query", name, args);
      legacy.set(name, { value, rowsRead: usage.rowsRead });
    }
    // Every legacy call that reads the table ships all 5,000 rows into the isolate.
    expect(legacy.get("open")?.rowsRead).toBe(5000);

    const dir = await mkdtemp(join(tmpdir(), "platform-migrate-"));
    try {
      await cp("fixtures/legacy", dir, { recursive: true });
      const migrated = await runCliAsync(["migrate", dir]);
      expect(migrated.status, migrated.stderr).toBe(0);
      expect(migrated.stdout).toContain("index tasks.by_done on [done]");
      expect(migrated.stdout).toContain("everything was rewritten");
      expect(migrated.stdout).toContain("mutation add took positional arguments (title, tag, priority)");
      const progress: string[] = [];
      await host.deployments.deploy("upgrade", { code: (await bundleCapsule(dir)).code }, (p) =>
        progress.push(`${p.table}.${p.index}`),
      );
      expect(new Set(progress)).toEqual(
        new Set([
          "tasks.by_creation",
          "tasks.by_done",
          "tasks.by_tag",
          "tasks.by_priority",
          "tasks.by_tag_done",
        ]),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const database = await host.deployments.db.deployment("upgrade");
    expect(database.legacy).toBe(false);
    expect(Object.keys(database.schema.tables.tasks?.indexes ?? {}).sort()).toEqual(
      ["by_creation", "by_done", "by_priority", "by_tag", "by_tag_done"].sort(),
    );
    // Rows unchanged on disk, byte for byte; their createdAt stays the legacy ISO string there.
    expect(await rawRows("upgrade", "tasks")).toEqual(before);
    for (const [name, args] of queries) {
      const { value, usage } = await call("upgrade", "query", name, args);
      // Same answers; createdAt now reads as epoch milliseconds (v1's number form).
      expect(value, name).toEqual(inV1Form(legacy.get(name)?.value));
      expect(usage.rowsRead, name).toBeLessThan(legacy.get(name)?.rowsRead as number);
    }
    expect((await call("upgrade", "query", "open")).usage.rowsRead).toBe(20);
    // Mutations now take one argument object, and write new rows in v1 form.
    const added = (await call("upgrade", "mutation", "add", { title: "v1 task", tag: "tag1", priority: 1 }))
      .value as Row;
    expect(typeof added.createdAt).toBe("number");
  }, 120_000);
});

describe("an immutable legacy artifact", () => {
  it("keeps running unchanged on this platform, across a restart, and through a failed upgrade", async () => {
    const code = await readFile("fixtures/legacy/artifact/v0-bundle.js", "utf8");
    const data = await mkdtemp(join(tmpdir(), "platform-legacy-host-"));
    let legacyHost = await startTestHost({ data });
    try {
      const deployed = await legacyHost.deployCode("old", code);
      expect(deployed.status, deployed.text()).toBe(201);
      const artifact = deployed.json<{ artifact: string; apiVersion: number }>();
      expect(artifact).toEqual(
        expect.objectContaining({ apiVersion: 0, artifact: createHash("sha256").update(code).digest("hex") }),
      );
      expect((await legacyHost.call("old", "mutation", "add", ["kept", "tag1", 50])).status).toBe(200);
      const answer = (await legacyHost.call("old", "query", "byTag", { tag: "tag1" })).json();
      // The host restarts (as after an upgrade of the platform): the same artifact answers the same.
      await legacyHost.close();
      legacyHost = await startTestHost({ data });
      expect((await legacyHost.call("old", "query", "byTag", { tag: "tag1" })).json()).toEqual(answer);
      // A v1 upgrade whose migration fails leaves the legacy version serving.
      const dir = await mkdtemp(join(tmpdir(), "platform-failed-upgrade-"));
      try {
        await cp("fixtures/legacy", dir, { recursive: true });
        expect((await runCliAsync(["migrate", dir])).status).toBe(0);
        const file = join(dir, "server", "index.ts");
        await writeFile(
          file,
          (await readFile(file, "utf8")).replace("done: boolean() }", "done: boolean(), owner: string() }"),
        );
        const failed = await legacyHost.deployCode("old", (await bundleCapsule(dir)).code);
        expect(failed.status).toBe(400);
        expect(failed.json<{ error: { message: string } }>().error.message).toBe(
          "Deploy failed: Missing value for tasks.owner",
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      expect((await legacyHost.call("old", "query", "byTag", { tag: "tag1" })).json()).toEqual(answer);
      const record = await legacyHost.admin("/v1/deploys/old", "GET");
      expect(record.json()).toMatchObject({ apiVersion: 0, artifact: artifact.artifact });
      expect((await legacyHost.deployments.db.deployment("old")).legacy).toBe(true);
    } finally {
      await legacyHost.close();
      await rm(data, { recursive: true, force: true });
    }
  }, 60_000);
});
