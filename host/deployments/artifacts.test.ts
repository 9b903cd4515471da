/**
 * Stored bundles are kept while some deployment uses them, or a deploy of them is under way, and
 * removed once none does: a developer deploying in a loop stored 16 MB per version for good.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import type { RecordStore } from "../db/index.js";
import { ArtifactStore, type NamedArtifacts } from "./artifacts.js";
import type { ArtifactRecord } from "./records.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
let store: ArtifactStore;
let stored: RecordStore<ArtifactRecord>;
/** The deployment records the store sees: id to the artifact it names. */
let records: Map<string, string>;

beforeEach(async () => {
  env = await tempDatabase();
  store = new ArtifactStore(env.db);
  stored = env.db.records<ArtifactRecord>("artifacts");
  records = new Map();
});
afterEach(() => {
  vi.useRealTimers();
  return env.dispose();
});

const artifact = (hash: string): ArtifactRecord => ({
  hash,
  code: `/* bundle ${hash} */`,
  apiVersion: 1,
  size: 20,
  createdAt: Date.now(),
});
const listed: NamedArtifacts = {
  all: async () => [...records].map(([id, hash]) => ({ id, artifact: hash })),
  one: async (id) => records.get(id),
};

/** A deploy of `hash` to `id`: stores it, then its record and use in one batch, then releases the one before. */
async function deploy(id: string, hash: string): Promise<void> {
  await store.add(artifact(hash), id);
  const before = records.get(id);
  await env.db.store.batch(store.switchWrites(id, hash, before));
  records.set(id, hash);
  if (before !== undefined && before !== hash) await store.release(before);
}

it("removes a replaced bundle at once, and keeps one another deployment still serves", async () => {
  await deploy("a", "h1");
  await deploy("b", "h1");
  await deploy("a", "h2");
  // "b" serves h1 still.
  expect(await stored.has("h1")).toBe(true);
  expect(await store.code("h1")).toBe("/* bundle h1 */");
  await deploy("b", "h3");
  expect(await stored.has("h1")).toBe(false);
  expect(await stored.has("h2")).toBe(true);
  expect(await stored.has("h3")).toBe(true);
  await expect(store.code("h1")).rejects.toMatchObject({ code: "internal" });
});

it("keeps a bundle a deploy has stored until its record names it, and drops it when the deploy fails", async () => {
  await store.add(artifact("pending"), "a");
  // Another deployment replaced this bundle meanwhile: not removed, a deploy of it is under way.
  await store.release("pending");
  expect(await stored.has("pending")).toBe(true);
  await store.abandon("a", "pending");
  expect(await stored.has("pending")).toBe(false);
});

it("keeps the bundle a deployment serves when a deploy of the same bundle fails", async () => {
  await deploy("a", "same");
  await store.add(artifact("same"), "a");
  await store.abandon("a", "same");
  expect(await stored.has("same")).toBe(true);
});

it("ends a deleted deployment's use in the batch that removes its record", async () => {
  await deploy("a", "h1");
  await env.db.store.batch([store.endWrite("a", "h1")]);
  records.delete("a");
  await store.release("h1");
  expect(await stored.has("h1")).toBe(false);
});

it("sweeps bundles nothing uses, uses a crash left, and gives earlier versions' records theirs", async () => {
  // Stored by an earlier version: an artifact and a record naming it, no use.
  await stored.put("old", artifact("old"));
  records.set("legacy", "old");
  await stored.put("orphan", artifact("orphan"));
  // A deploy that a crash ended, a day and more ago.
  vi.useFakeTimers({ now: Date.now() - 25 * 60 * 60 * 1000, toFake: ["Date"] });
  await store.add(artifact("crashed"), "c");
  vi.useRealTimers();
  // One under way now.
  await store.add(artifact("running"), "r");
  expect(await store.sweep(listed)).toBe(2);
  expect(await stored.has("orphan")).toBe(false);
  expect(await stored.has("crashed")).toBe(false);
  expect(await stored.has("running")).toBe(true);
  expect(await stored.has("old")).toBe(true);
  // The earlier record's bundle has its use now: replacing it removes it.
  await deploy("legacy", "new");
  expect(await stored.has("old")).toBe(false);
});

it("gives every earlier record its use once per database, before any bundle is released", async () => {
  await stored.put("shared", artifact("shared"));
  records.set("a", "shared");
  records.set("b", "shared");
  await store.adoptRecords(listed);
  await deploy("a", "next");
  expect(await stored.has("shared")).toBe(true);
  // Once: a record added later is not read again (its deploy wrote its use).
  records.set("c", "unread");
  const read = vi.fn(listed.all);
  await store.adoptRecords({ ...listed, all: read });
  expect(read).not.toHaveBeenCalled();
});

it("writes a bundle before the lock every host shares, and again under it when a sweep took it", async () => {
  // A 16 MiB bundle written under the lock held other developers' deploys 0.4 s each (a review).
  let release!: () => void;
  const held = env.db.exclusive(
    "artifacts",
    () =>
      new Promise<void>((resolve) => {
        release = resolve;
      }),
  );
  const adding = store.add(artifact("while-held"), "app");
  await vi.waitFor(async () => expect(await stored.get("while-held")).toBeDefined());
  // A sweep holding the lock removes it (no use yet): the add, once in, writes it again.
  await stored.delete("while-held");
  release();
  await held;
  await adding;
  expect(await stored.get("while-held")).toMatchObject({ hash: "while-held" });
});
