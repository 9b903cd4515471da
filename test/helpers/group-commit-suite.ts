/**
 * Group commit on any backend (STYLE.md: one suite, every backend): mutations queued at once on
 * one deployment are committed in groups, several groups under one taking of the write lock, and
 * each mutation still reads every write committed before it. `open` gives a fresh database.
 */
import { describe, expect, it } from "vitest";
import type { DatabaseQuota, HostDatabase, TenantDatabase } from "../../host/db/index.js";
import { countKeyOf } from "../../host/db/keys.js";
import type { CompiledIndex, CompiledTable } from "../../host/db/stored-schema.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { SchemaSpec } from "../../sdk/values/index.js";
import { CREATION_INDEX } from "../../sdk/values/index.js";
import { deferred } from "./deferred.js";

/** A counter every mutation increments, and a table every mutation inserts into. */
export const COUNTER_SCHEMA: SchemaSpec = {
  tables: {
    counters: { fields: { n: { kind: "number", optional: false } }, indexes: {} },
    items: { fields: { n: { kind: "number", optional: false } }, indexes: { by_n: ["n"] } },
  },
};

/**
 * Reads the counter, writes it back one higher and inserts an item holding the value it read. Its
 * arguments name the counter, so a group on PostgreSQL reads the counter's row ahead (group-reads.ts):
 * the first member finds it in the snapshot, the others the writes of those before them.
 */
export function increment(deployment: TenantDatabase, counter: string): Promise<number> {
  return deployment
    .mutate(
      async (tx) => {
        const row = await tx.get("counters", counter);
        const n = (JSON.parse(row as string) as { n: number }).n;
        await tx.update("counters", counter, { n: n + 1 });
        await tx.insert("items", { n });
        return n;
      },
      { handler: "increment", argsJson: JSON.stringify({ counter }) },
    )
    .then((result) => result.value);
}

/** A deployment with the counter schema and a counter at 0; returns the counter's id. */
export async function withCounter(deployment: TenantDatabase): Promise<string> {
  await deployment.migrate(COUNTER_SCHEMA);
  return (await deployment.mutate((tx) => tx.insert("counters", { n: 0 }))).value;
}

/** The counter's value and how many items there are, read in one query. */
export async function counted(deployment: TenantDatabase, counter: string) {
  const result = await deployment.query(async (tx) => ({
    n: (JSON.parse((await tx.get("counters", counter)) as string) as { n: number }).n,
    items: await tx.query(
      { table: "items", index: "by_creation", range: [], order: "asc" },
      { kind: "count" },
    ),
  }));
  const { n, items } = result.value;
  return { n, items: items.kind === "count" ? items.count : -1 };
}

/** `open` gives a fresh database with the documented quota, or with `quota` where given. */
export function groupCommitSuite(
  name: string,
  open: (quota?: Partial<DatabaseQuota>) => Promise<{ db: HostDatabase; dispose: () => Promise<void> }>,
): void {
  describe(`${name}: group commit`, () => {
    it("commits 300 read-modify-write mutations queued at once, each reading all before it, taking the lock once per 4 groups at most", async () => {
      const { db, dispose } = await open();
      try {
        const deployment = await db.deployment("groups");
        const counter = await withCounter(deployment);
        let locks = 0;
        let snapshots = 0;
        const exclusive = deployment.exclusive.bind(deployment);
        deployment.exclusive = (work) => {
          locks++;
          return exclusive(work);
        };
        // A group's snapshot is a lazy one, or the one the group before began with its commit.
        const store = deployment.store;
        const lazySnapshot = store.lazySnapshot.bind(store);
        store.lazySnapshot = () => {
          snapshots++;
          return lazySnapshot();
        };
        const commitAndContinue = store.commitAndContinue.bind(store);
        store.commitAndContinue = (...args) => {
          snapshots++;
          return commitAndContinue(...args);
        };
        const seen = await Promise.all(Array.from({ length: 300 }, () => increment(deployment, counter)));
        // Every value from 0 to 299 read exactly once: no mutation missed one committed before it.
        expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i));
        expect(await counted(deployment, counter)).toEqual({ n: 300, items: 300 });
        expect(snapshots).toBeGreaterThanOrEqual(Math.ceil(300 / 64));
        expect(locks).toBeLessThanOrEqual(Math.ceil(snapshots / 4));
      } finally {
        await dispose();
      }
    });

    it("answers mutations that wait for the write lock past their bound 503 unavailable: they never run, and the queue goes on", async () => {
      const { db, dispose } = await open({ mutationWaitMs: 300 });
      try {
        const deployment = await db.deployment("held");
        const counter = await withCounter(deployment);
        // Other work holds the write lock (as a drop, an import or a migration would) until released.
        const released = deferred();
        const holding = deferred();
        const holder = deployment.exclusive(async () => {
          holding.resolve();
          await released.promise;
        });
        await holding.promise;
        let ran = 0;
        const outcomes = await Promise.allSettled(
          Array.from({ length: 3 }, () =>
            deployment.mutate(async (tx) => {
              ran++;
              await tx.insert("items", { n: -1 });
            }),
          ),
        );
        for (const outcome of outcomes) {
          expect(outcome.status).toBe("rejected");
          const error = (outcome as PromiseRejectedResult).reason;
          expect(error).toMatchObject({ code: "unavailable", status: 503, retryAfterSeconds: 1 });
          expect(error.message).toContain("did not run: nothing was written");
        }
        released.resolve();
        await holder;
        // The queue goes on: the next mutation runs, and none of those answered ran meanwhile.
        expect(await increment(deployment, counter)).toBe(0);
        expect(ran).toBe(0);
        expect(await counted(deployment, counter)).toEqual({ n: 1, items: 1 });
      } finally {
        await dispose();
      }
    });

    it("answers a failed mutation alone while the groups around it commit", async () => {
      const { db, dispose } = await open();
      try {
        const deployment = await db.deployment("failing");
        const counter = await withCounter(deployment);
        const outcomes = await Promise.allSettled(
          Array.from({ length: 200 }, (_, i) =>
            i % 7 === 3
              ? deployment.mutate(async (tx) => {
                  await tx.insert("items", { n: -1 });
                  throw new Error(`failing ${i}`);
                })
              : increment(deployment, counter),
          ),
        );
        const failed = outcomes.filter((outcome) => outcome.status === "rejected");
        expect(failed).toHaveLength(
          Array.from({ length: 200 }, (_, i) => i).filter((i) => i % 7 === 3).length,
        );
        const ok = 200 - failed.length;
        expect(await counted(deployment, counter)).toEqual({ n: ok, items: ok });
      } finally {
        await dispose();
      }
    });

    it("refuses a row too long to index with 400 before its group commits, and commits the others", async () => {
      // PostgreSQL refuses an index key over about 2,700 bytes: such a write once failed its whole
      // group, innocent mutations with it, as 500s.
      const { db, dispose } = await open();
      try {
        const deployment = await db.deployment("long-keys");
        const schema: SchemaSpec = {
          tables: {
            notes: {
              fields: { text: { kind: "string", optional: false }, body: { kind: "string", optional: true } },
              indexes: { by_text: ["text"] },
            },
          },
        };
        await deployment.migrate(schema);
        const outcomes = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) =>
            deployment.mutate((tx) => tx.insert("notes", { text: i === 7 ? "x".repeat(4000) : `note ${i}` })),
          ),
        );
        expect(outcomes.map((outcome) => outcome.status)).toEqual(
          Array.from({ length: 20 }, (_, i) => (i === 7 ? "rejected" : "fulfilled")),
        );
        const refused = (outcomes[7] as PromiseRejectedResult).reason as { code: string; message: string };
        expect(refused.code).toBe("bad_request");
        expect(refused.message).toMatch(
          /too long to index in by_text: its entry would be \d+ bytes, at most 2048/,
        );
        const count = await deployment.query((tx) =>
          tx.query({ table: "notes", index: "by_creation", range: [], order: "asc" }, { kind: "count" }),
        );
        expect(count.value).toEqual({ kind: "count", count: 19 });
        // A long value not indexed is stored; a schema that would index it is refused, changing nothing.
        await deployment.mutate((tx) => tx.insert("notes", { text: "short", body: "y".repeat(4000) }));
        const indexed: SchemaSpec = {
          tables: { notes: { ...schema.tables.notes, indexes: { by_text: ["text"], by_body: ["body"] } } },
        } as SchemaSpec;
        await expect(deployment.migrate(indexed)).rejects.toMatchObject({ code: "bad_request" });
        expect([...(deployment.tables.get("notes")?.indexes.keys() ?? [])]).not.toContain("by_body");
        // A row stored before the limit (here: while it was higher) keeps working: changed on its
        // other fields, and deleted; only a new long entry is refused, before anything is written,
        // so a handler that catches the refusal goes on with its view whole.
        const limits = LIMITS as { indexKeyBytes: number };
        limits.indexKeyBytes = 4096;
        const old = await deployment
          .mutate((tx) => tx.insert("notes", { text: "o".repeat(2300) }))
          .finally(() => {
            limits.indexKeyBytes = 2048;
          });
        await deployment.mutate((tx) => tx.update("notes", old.value, { body: "edited" }));
        const caught = await deployment.mutate(async (tx) => {
          const refused = await tx.update("notes", old.value, { text: "n".repeat(2300) }).then(
            () => "written",
            (error: { code: string }) => error.code,
          );
          return { refused, row: JSON.parse((await tx.get("notes", old.value)) as string) };
        });
        expect(caught.value.refused).toBe("bad_request");
        expect(caught.value.row).toMatchObject({ text: "o".repeat(2300), body: "edited" });
        await deployment.mutate((tx) => tx.delete("notes", old.value));
        const left = await deployment.query((tx) =>
          tx.query({ table: "notes", index: "by_text", range: [], order: "asc" }, { kind: "count" }),
        );
        expect(left.value).toEqual({ kind: "count", count: 20 });
      } finally {
        await dispose();
      }
    });

    it("fails the members of a group whose commit fails; then reads the row bytes again and tells listeners anything may have changed", async () => {
      const { db, dispose } = await open();
      try {
        const deployment = await db.deployment("refused");
        const counter = await withCounter(deployment);
        const items = deployment.tables.get("items") as CompiledTable;
        const size = countKeyOf((items.indexes.get(CREATION_INDEX) as CompiledIndex).prefix);
        // The table's stored size made something no add can move: each commit moving it fails whole.
        await deployment.store.batch([{ type: "put", key: size, value: "not a count" }]);
        const heard: Array<Buffer[] | undefined> = [];
        deployment.onCommit((writeSet) => heard.push(writeSet));
        const outcomes = await Promise.allSettled(
          Array.from({ length: 5 }, () => increment(deployment, counter)),
        );
        expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(5).fill("rejected"));
        // Its write might have landed (an answer lost with the connection): nothing is assumed.
        expect(deployment.rowBytes.known).toBeUndefined();
        expect(heard.length).toBeGreaterThan(0);
        expect(heard.every((writeSet) => writeSet === undefined)).toBe(true);
        await deployment.store.batch([{ type: "del", key: size }]);
        expect(await increment(deployment, counter)).toBe(0);
        expect(await counted(deployment, counter)).toEqual({ n: 1, items: 1 });
        expect(String(deployment.rowBytes.known)).toBe(await deployment.store.get(deployment.rowBytes.key));
      } finally {
        await dispose();
      }
    });
  });
}
