/**
 * The hourly artifact sweep holds the lock every host's deploys share on PostgreSQL. It parsed
 * every deployment record under it (declarations and env of up to megabytes: 2.7 s for 100 large
 * ones, every developer's deploys held meanwhile); now records are read before the lock, and under
 * it only those whose artifact uses disagree with what was read are read again. These tests run
 * the registry's sweep on real records and count the records parsed while the lock is held.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import type { RecordStore } from "../db/index.js";
import type { ArtifactRecord, DeploymentRecord } from "./records.js";
import { DeploymentRegistry } from "./registry.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
let registry: DeploymentRegistry;
let stored: RecordStore<ArtifactRecord>;
/** The id of each deployment record parsed, as parsed before the sweep's lock and under it. */
let parsed: { before: string[]; locked: string[] };
/** Whether the test holds the artifact lock (as another host's deploy would), not the sweep. */
let othersHold = false;

beforeEach(async () => {
  env = await tempDatabase();
  registry = new DeploymentRegistry(env.db, () => {});
  stored = env.db.records<ArtifactRecord>("artifacts");
  parsed = { before: [], locked: [] };
});
afterEach(async () => {
  vi.restoreAllMocks();
  registry.close();
  await env.dispose();
});

/** Counts the deployment records parsed from now on, and whether the sweep held the artifact lock then. */
function countParses(): void {
  const parse = JSON.parse;
  vi.spyOn(JSON, "parse").mockImplementation((text: string, reviver?: Parameters<typeof parse>[1]) => {
    const value = parse(text, reviver);
    if (typeof text === "string" && text.includes('"declaration":')) {
      const locked = env.db.usersHere("artifacts") > 0 && !othersHold;
      (locked ? parsed.locked : parsed.before).push((value as DeploymentRecord).id);
    }
    return value;
  });
}

const artifact = (hash: string): ArtifactRecord => ({
  hash,
  code: `/* bundle ${hash} */`,
  apiVersion: 1,
  size: 20,
  createdAt: Date.now(),
});

/** A deployment record as large as a real one may be (a quarter MiB of env). */
const record = (id: string, hash: string): DeploymentRecord => ({
  id,
  artifact: hash,
  declaration: { apiVersion: 1, schema: { tables: {} } } as unknown as DeploymentRecord["declaration"],
  env: { LARGE: "x".repeat(256 * 1024) },
  incarnation: `${id}-1`,
  owner: "dev",
  restricted: false,
  approved: [],
  createdAt: 1,
  updatedAt: 1,
});

/** The batch a deploy's switch commits: the record naming `hash`, with its uses. */
async function switchTo(id: string, hash: string, before?: string): Promise<void> {
  await env.db.store.batch([
    ...registry.writesOf(record(id, hash)),
    ...registry.artifacts.switchWrites(id, hash, before),
  ]);
}

/** A whole deploy of `hash` to `id`: stored with its pending use, then switched to. */
async function deploy(id: string, hash: string, before?: string): Promise<void> {
  await registry.artifacts.add(artifact(hash), id);
  await switchTo(id, hash, before);
}

/** Holds the artifact lock, as another host's deploy does, until the answer is called. */
function holdLock(): { release: () => Promise<void> } {
  let open = () => {};
  othersHold = true;
  const held = env.db.exclusive(
    "artifacts",
    () =>
      new Promise<void>((resolve) => {
        open = resolve;
      }),
  );
  return {
    release: async () => {
      othersHold = false;
      open();
      await held;
    },
  };
}

it("parses no deployment record under the lock when the records agree with their artifacts' uses", async () => {
  await deploy("a", "h1");
  await deploy("b", "h1");
  await deploy("c", "h2");
  await stored.put("orphan", artifact("orphan"));
  countParses();
  expect(await registry.sweepArtifacts()).toBe(1);
  expect(parsed.locked).toEqual([]);
  expect(parsed.before.sort()).toEqual(["a", "b", "c"]);
  expect(await stored.has("orphan")).toBe(false);
  expect(await stored.has("h1")).toBe(true);
  expect(await stored.has("h2")).toBe(true);
});

it("reads again under the lock only the records changed after they were read, and keeps what they name", async () => {
  await deploy("a", "h1");
  await deploy("b", "h2");
  await deploy("c", "h3");
  // Deploys under way, their bundles stored before the sweep takes the lock.
  await registry.artifacts.add(artifact("h4"), "a");
  await registry.artifacts.add(artifact("h5"), "new");
  const other = holdLock();
  countParses();
  const sweeping = registry.sweepArtifacts();
  // Every record read, the sweep waits for the lock: meanwhile the deploys switch, one is deleted.
  await vi.waitFor(() => expect(env.db.usersHere("artifacts")).toBe(2));
  expect(parsed.before.sort()).toEqual(["a", "b", "c"]);
  await switchTo("a", "h4", "h1");
  await switchTo("new", "h5");
  await registry.retire(record("c", "h3"), {
    type: "put",
    key: env.db.records("test-removals").key("c"),
    value: "{}",
  });
  await other.release();
  // h1 was replaced and h3's deployment deleted; what "a" and "new" serve now stays (read as
  // before the lock, "a" named h1 and "new" nothing: its use of h4 and h5 would have gone).
  expect(await sweeping).toBe(2);
  for (const kept of ["h2", "h4", "h5"]) expect(await stored.has(kept)).toBe(true);
  expect(await stored.has("h1")).toBe(false);
  expect(await stored.has("h3")).toBe(false);
  // "c" is read again too, and found gone: nothing to parse.
  expect(parsed.locked.sort()).toEqual(["a", "new"]);
  // The uses agree with the records again: the next sweep reads none under the lock.
  parsed.locked = [];
  expect(await registry.sweepArtifacts()).toBe(0);
  expect(parsed.locked).toEqual([]);
  // A replaced bundle goes as soon as its deployment's use does.
  await deploy("a", "h6", "h4");
  await registry.artifacts.release("h4");
  expect(await stored.has("h4")).toBe(false);
});

it("gives a record an earlier version wrote without its use its use, reading it again under the lock", async () => {
  await stored.put("old", artifact("old"));
  await env.db.records<DeploymentRecord>("deployments").put("legacy", record("legacy", "old"));
  countParses();
  expect(await registry.sweepArtifacts()).toBe(0);
  expect(parsed.locked).toEqual(["legacy"]);
  expect(await stored.has("old")).toBe(true);
  parsed.locked = [];
  expect(await registry.sweepArtifacts()).toBe(0);
  expect(parsed.locked).toEqual([]);
  // Its use is there now: replacing its bundle removes it.
  await deploy("legacy", "new", "old");
  await registry.artifacts.release("old");
  expect(await stored.has("old")).toBe(false);
});
