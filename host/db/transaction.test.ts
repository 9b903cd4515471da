import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { capsule, type Id, number, string, table } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import { NOT_READY, readSetIntersects, type TenantDatabase, Transaction } from "./index.js";
import type { KvSnapshot } from "./kv/index.js";

const app = capsule({
  schema: {
    counters: table({ name: string(), value: number() }).index("by_name", ["name"]),
    notes: table({ text: string(), tag: string() }).index("by_tag", ["tag"]),
  },
});

let env: Awaited<ReturnType<typeof tempDatabase>>;
let deployment: TenantDatabase;
let t: ReturnType<typeof typedDb<typeof app.definition.schema>>;

beforeEach(async () => {
  env = await tempDatabase();
  deployment = await env.db.deployment("tx");
  await deployment.migrate(app.declaration.schema);
  t = typedDb(deployment, app);
});
afterEach(() => env.dispose());

describe("transactions", () => {
  it("writes nothing when the handler throws", async () => {
    await expect(
      t.write(async (d) => {
        await d.notes.insert({ text: "a", tag: "x" });
        await d.notes.insert({ text: "b", tag: "x" });
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect((await t.read((d) => d.notes.count())).value).toBe(0);
    expect((await t.read((d) => d.notes.withIndex("by_tag").count())).value).toBe(0);
  });

  it("keeps a reader's snapshot stable while a writer commits", async () => {
    await t.write((d) => d.notes.insert({ text: "a", tag: "x" }));
    const { value } = await t.read(async (d) => {
      const before = await d.notes.withIndex("by_tag", (q) => q.eq("tag", "x")).collect();
      await t.write(async (w) => {
        await w.notes.insert({ text: "b", tag: "x" });
        await w.notes.update(before[0]!.id, { text: "changed" });
      });
      const after = await d.notes.withIndex("by_tag", (q) => q.eq("tag", "x")).collect();
      const row = await d.notes.get(before[0]!.id);
      return { before: before.map((r) => r.text), after: after.map((r) => r.text), row: row?.text };
    });
    expect(value).toEqual({ before: ["a"], after: ["a"], row: "a" });
    expect((await t.read((d) => d.notes.collect())).value.map((r) => r.text)).toEqual(["changed", "b"]);
  });

  it("serializes writers on one deployment: concurrent increments are exact", async () => {
    const { value: counterId } = await t.write((d) => d.counters.insert({ name: "c", value: 0 }));
    await Promise.all(
      Array.from({ length: 40 }, () =>
        t.write(async (d) => {
          const row = await d.counters.get(counterId);
          await new Promise((resolve) => setImmediate(resolve));
          await d.counters.update(counterId, { value: row!.value + 1 });
        }),
      ),
    );
    expect((await t.read((d) => d.counters.get(counterId))).value?.value).toBe(40);
  });

  it("lets readers proceed while a writer holds the lock", async () => {
    await t.write((d) => d.notes.insert({ text: "a", tag: "x" }));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowWriter = t.write(async (d) => {
      await d.notes.insert({ text: "b", tag: "x" });
      await gate;
    });
    const { value } = await t.read((d) => d.notes.count());
    expect(value).toBe(1);
    release();
    await slowWriter;
    expect((await t.read((d) => d.notes.count())).value).toBe(2);
  });

  it("records read sets and write sets that intersect exactly when they should", async () => {
    const x = await t.read((d) => d.notes.withIndex("by_tag", (q) => q.eq("tag", "x")).collect());
    const y = await t.read((d) => d.notes.withIndex("by_tag", (q) => q.eq("tag", "y")).collect());
    const write = await t.write((d) => d.notes.insert({ text: "a", tag: "x" }));
    expect(write.writeSet.length).toBe(3);
    expect(readSetIntersects(x.readSet, write.writeSet)).toBe(true);
    expect(readSetIntersects(y.readSet, write.writeSet)).toBe(false);
    const byId = await t.read((d) => d.notes.get(write.value));
    const other = await t.write((d) => d.notes.insert({ text: "b", tag: "z" }));
    expect(readSetIntersects(byId.readSet, other.writeSet)).toBe(false);
    const update = await t.write((d) => d.notes.update(write.value, { text: "c" }));
    expect(readSetIntersects(byId.readSet, update.writeSet)).toBe(true);
  });

  it("tells commit listeners what was written", async () => {
    const seen: number[] = [];
    const stop = deployment.onCommit((keys) => seen.push(keys?.length ?? -1));
    await t.write((d) => d.notes.insert({ text: "a", tag: "x" }));
    await t.write(async () => "no writes");
    stop();
    await t.write((d) => d.notes.insert({ text: "b", tag: "x" }));
    expect(seen).toEqual([3]);
  });

  it("keeps createdAt strictly increasing across reopen", async () => {
    const { value: a } = await t.write((d) => d.notes.insert({ text: "a", tag: "x" }), { now: 1000 });
    const { value: b } = await t.write((d) => d.notes.insert({ text: "b", tag: "x" }), { now: 1000 });
    const rows = (await t.read((d) => d.notes.collect())).value;
    expect(rows.map((r) => r.id)).toEqual([a, b]);
    expect(rows[1]!.createdAt).toBeGreaterThan(rows[0]!.createdAt);
  });

  it("answers point reads and writes synchronously on classic-level, and failures as rejections", async () => {
    const { value: id } = await deployment.mutate((tx) => tx.insert("notes", { text: "a", tag: "x" }));
    await deployment.mutate((tx) => {
      const inserted = tx.tryInsertSync("notes", { text: "b", tag: "y" });
      expect(typeof inserted).toBe("string");
      const row = tx.tryGetSync("notes", id);
      expect(typeof row).toBe("string");
      // Own writes are read back synchronously too.
      expect(JSON.parse(tx.tryGetSync("notes", inserted as string) as string)).toMatchObject({ text: "b" });
      expect(tx.tryUpdateSync("notes", id, { text: "changed" })).toBe(true);
      const failed = tx.get("nope", id);
      expect(failed).toBeInstanceOf(Promise);
      const missing = tx.delete("notes", "AAAAAAAAAAAAAAAAAAAAAA");
      expect(missing).toBeInstanceOf(Promise);
      return Promise.all([
        expect(failed).rejects.toMatchObject({ code: "bad_request", message: 'Unknown table "nope".' }),
        expect(missing).rejects.toMatchObject({ code: "not_found" }),
      ]);
    });
    const rows = (await t.read((d) => d.notes.collect())).value;
    expect(rows.map((r) => r.text)).toEqual(["changed", "b"]);
  });

  it("falls back from the fast path when the snapshot must read asynchronously, as on PostgreSQL", async () => {
    const { value: id } = await deployment.mutate((tx) => tx.insert("notes", { text: "a", tag: "x" }));
    const snapshot = await deployment.store.snapshot();
    const asyncOnly: KvSnapshot = {
      get: (key: Buffer) => snapshot.get(key),
      tryGetSync: () => NOT_READY,
      iterate: snapshot.iterate.bind(snapshot),
      close: () => snapshot.close(),
    };
    const tx = new Transaction(deployment, asyncOnly, { mode: "write" });
    try {
      expect(tx.tryGetSync("notes", id)).toBe(NOT_READY);
      expect(tx.tryUpdateSync("notes", id, { text: "b" })).toBe(false);
      expect(tx.tryDeleteSync("notes", id)).toBe(false);
      expect(tx.readSet.keys).toHaveLength(0);
      // An insert without references reads nothing: it is still answered at once.
      const inserted = tx.tryInsertSync("notes", { text: "c", tag: "y" });
      expect(typeof inserted).toBe("string");
      // Its own writes are in memory, so reading them back needs no store.
      expect(JSON.parse(tx.tryGetSync("notes", inserted as string) as string)).toMatchObject({ text: "c" });
      expect(JSON.parse((await tx.get("notes", id)) as string)).toMatchObject({ text: "a" });
      await tx.update("notes", id, { text: "b" });
      expect(JSON.parse(tx.tryGetSync("notes", id) as string)).toMatchObject({ text: "b" });
      expect(tx.writesPending).toBe(false);
      const sealed = tx.seal();
      expect(sealed.writeSet.length).toBeGreaterThan(0);
      // The insert moved counts; the group commit stores them (no count is read before then).
      expect([...(sealed.counts?.values() ?? [])]).toContain(1);
    } finally {
      await snapshot.close();
    }
  });

  it("commits queued mutations in groups: each sees the ones before it, one batch per group", async () => {
    const commits: number[] = [];
    const stop = deployment.onCommit((keys) => commits.push(keys?.length ?? -1));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        deployment.mutate(async (tx) => {
          await tx.insert("notes", { text: `n${i}`, tag: "g" });
          const seen = await tx.query(
            {
              table: "notes",
              index: "by_tag",
              range: [{ op: "eq", field: "tag", value: "g" }],
              order: "asc",
            },
            { kind: "count" },
          );
          return seen.kind === "count" ? seen.count : -1;
        }),
      ),
    );
    stop();
    // Serialized: the i-th writer sees the i writers before it and itself.
    expect(results.map((r) => r.value)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // Each write set holds only that mutation's own writes (row + 2 index entries).
    for (const result of results) expect(result.writeSet.length).toBe(3);
    // Fewer batches than mutations, and every key reported once.
    expect(commits.length).toBeLessThan(20);
    expect(commits.reduce((a, b) => a + b, 0)).toBe(60);
    expect((await t.read((d) => d.notes.withIndex("by_tag", (q) => q.eq("tag", "g")).count())).value).toBe(
      20,
    );
  });

  it("drops only the writes of a mutation that throws inside a group", async () => {
    const { value: counter } = await deployment.mutate((tx) =>
      tx.insert("counters", { name: "c", value: 0 }),
    );
    const bump = (fail: boolean) =>
      deployment.mutate(async (tx) => {
        const row = JSON.parse((await tx.get("counters", counter)) as string) as { value: number };
        await tx.update("counters", counter, { value: row.value + 1 });
        await tx.insert("notes", { text: `after ${row.value}`, tag: fail ? "failed" : "kept" });
        if (fail) throw new Error("boom");
        return row.value + 1;
      });
    const outcomes = await Promise.allSettled([
      bump(false),
      bump(true),
      bump(false),
      bump(true),
      bump(false),
    ]);
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value.value : "rejected"))).toEqual([
      1,
      "rejected",
      2,
      "rejected",
      3,
    ]);
    const { value: after } = await t.read(async (d) => ({
      counter: (await d.counters.get(counter as Id<"counters">))?.value,
      failed: await d.notes.withIndex("by_tag", (q) => q.eq("tag", "failed")).count(),
      kept: await d.notes.withIndex("by_tag", (q) => q.eq("tag", "kept")).count(),
    }));
    expect(after).toEqual({ counter: 3, failed: 0, kept: 3 });
  });

  it("puts back the rest of a group that ran past its window, and they run next in order", async () => {
    const commits: number[] = [];
    const stop = deployment.onCommit((keys) => commits.push(keys?.length ?? -1));
    const order: number[] = [];
    // Hold the lock so the five below queue up and start as one group.
    let release!: () => void;
    const blocker = deployment.mutate(() => new Promise<void>((resolve) => (release = resolve)));
    const queued = Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        deployment.mutate(async (tx) => {
          if (i === 0) await new Promise((resolve) => setTimeout(resolve, 40));
          order.push(i);
          await tx.insert("notes", { text: `w${i}`, tag: "window" });
          return i;
        }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    await blocker;
    const results = await queued;
    stop();
    expect(results.map((r) => r.value)).toEqual([0, 1, 2, 3, 4]);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    // The slow first member filled its group's window: the other four were committed after it.
    expect(commits).toEqual([3, 12]);
    const texts = (await t.read((d) => d.notes.withIndex("by_tag", (q) => q.eq("tag", "window")).collect()))
      .value;
    expect(texts.map((r) => r.text)).toEqual(["w0", "w1", "w2", "w3", "w4"]);
  });

  it("answers the members that finished while a later one of their group is still running", async () => {
    const byTagEarly = {
      table: "notes",
      index: "by_tag",
      range: [{ op: "eq" as const, field: "tag", value: "early" }],
      order: "asc" as const,
    };
    let release!: () => void;
    const blocker = deployment.mutate(() => new Promise<void>((resolve) => (release = resolve)));
    let firstAnswered = false;
    const first = deployment
      .mutate((tx) => tx.insert("notes", { text: "first", tag: "early" }))
      .then((result) => {
        firstAnswered = true;
        return result;
      });
    const slow = deployment.mutate(async (tx) => {
      // Runs in the same group as `first`, after it: waits (up to 2 s) for `first` to be answered.
      const since = Date.now();
      while (!firstAnswered && Date.now() - since < 2000)
        await new Promise((resolve) => setTimeout(resolve, 5));
      await tx.insert("notes", { text: "slow", tag: "early" });
      // The count moved by `first` (stored by the batch that answered it) and by its own insert.
      const count = await tx.query(byTagEarly, { kind: "count" });
      return { firstAnswered, count };
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    await blocker;
    expect((await slow).value).toEqual({ firstAnswered: true, count: { kind: "count", count: 2 } });
    expect((await first).writeSet.length).toBe(3);
    expect((await deployment.query((tx) => tx.query(byTagEarly, { kind: "count" }))).value).toEqual({
      kind: "count",
      count: 2,
    });
    const rows = (await t.read((d) => d.notes.withIndex("by_tag", (q) => q.eq("tag", "early")).collect()))
      .value;
    expect(rows.map((r) => r.text)).toEqual(["first", "slow"]);
  });
});
