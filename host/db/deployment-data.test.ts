/**
 * An import is refused before it is built when it would write more than one batch may hold in the
 * host's memory: more rows, index entries and counts than LIMITS.importOperations, or (stopping as
 * soon as it passes) more row bytes than the deployment may store.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { capsule, string, table } from "../../sdk/server/index.js";
import { tempDatabase } from "../../test/helpers/db.js";
import {
  type DeploymentData,
  dataOperations,
  existingKeys,
  readDataHead,
  tableRows,
} from "./deployment-data.js";
import { idempotencyRecordKey } from "./keys.js";

const app = capsule({
  schema: {
    notes: table({ text: string(), tag: string() }).index("by_text", ["text"]).index("by_tag", ["tag"]),
  },
});

let env: Awaited<ReturnType<typeof tempDatabase>>;
let data: DeploymentData;
beforeEach(async () => {
  env = await tempDatabase();
  const deployment = await env.db.deployment("d");
  await deployment.migrate(app.declaration.schema);
  await deployment.mutate(async (tx) => {
    for (let i = 0; i < 10; i++) await tx.insert("notes", { text: `note ${i}`, tag: "x" });
  });
  const snapshot = await env.db.store.snapshot();
  try {
    const rows: string[] = [];
    for await (const batch of tableRows(snapshot, "d", "notes")) rows.push(...batch);
    data = Object.assign(await readDataHead(snapshot, "d"), { tables: new Map([["notes", rows]]) });
  } finally {
    await snapshot.close();
  }
});
afterEach(() => env.dispose());

it("refuses more rows, index entries and counts than one import may write, as soon as it knows", async () => {
  const limits = LIMITS as { importOperations: number };
  const kept = limits.importOperations;
  try {
    // 10 rows, each with an entry in its table's creation index and the two declared ones.
    const { operations } = await dataOperations("d", data);
    const writes = operations.filter((op) => op.type === "put").length;
    expect(writes).toBeGreaterThan(10 * 3);
    limits.importOperations = 10 * 4 - 1;
    await expect(dataOperations("d", data)).rejects.toMatchObject({
      code: "quota_exceeded",
      message: expect.stringMatching(/are 40 writes, past the 39/),
    });
    // The counts the entries add to are writes too: one per distinct text (10), one for the
    // tag, one for the table's size. Past the limit, the build stops as they come.
    limits.importOperations = 10 * 4 + 12;
    await expect(dataOperations("d", data)).resolves.toBeDefined();
    limits.importOperations = 10 * 4 + 11;
    await expect(dataOperations("d", data)).rejects.toMatchObject({
      code: "quota_exceeded",
      message: expect.stringMatching(/are at least \d+ writes, past the 51 one import/),
    });
  } finally {
    limits.importOperations = kept;
  }
});

it("stops building as soon as the row bytes pass the deployment's limit", async () => {
  const { rowBytes } = await dataOperations("d", data);
  await expect(dataOperations("d", data, rowBytes)).resolves.toBeDefined();
  await expect(dataOperations("d", data, rowBytes - 1)).rejects.toMatchObject({ code: "quota_exceeded" });
});

it("builds a large import a few thousand rows per turn, so other work runs meanwhile", async () => {
  const template = data.tables.get("notes")?.[0] ?? "";
  const many = Array.from({ length: 10_000 }, (_, i) =>
    template.replace(/"id":"[^"]+"/, `"id":"${String(i).padStart(22, "a")}"`),
  );
  const large = Object.assign({}, data, { tables: new Map([["notes", many]]) });
  let turns = 0;
  let building = true;
  const count = () => {
    turns++;
    if (building) setImmediate(count);
  };
  setImmediate(count);
  const { operations } = await dataOperations("d", large);
  building = false;
  expect(operations.length).toBeGreaterThan(30_000);
  expect(turns).toBeGreaterThanOrEqual(4);
});

it("refuses to replace a deployment holding more keys than one import may replace, holding no more of them (found by review)", async () => {
  // Before: a replacing import gathered every key its target held, however many: a deployment
  // filled to its quota with small rows (some 18 million keys) ran the host out of memory.
  const limits = LIMITS as { importOperations: number };
  const kept = limits.importOperations;
  const snapshot = await env.db.store.snapshot();
  try {
    const all = await existingKeys(snapshot, "d");
    expect(all.hasRows).toBe(true);
    limits.importOperations = all.keys.length;
    expect((await existingKeys(snapshot, "d")).keys).toHaveLength(all.keys.length);
    limits.importOperations = all.keys.length - 1;
    await expect(existingKeys(snapshot, "d")).rejects.toMatchObject({
      code: "quota_exceeded",
      message: `Deployment d holds more than ${all.keys.length - 1} keys (rows, index entries and counts), more than an import may replace at once; delete the deployment and import into it again.`,
    });
  } finally {
    limits.importOperations = kept;
    await snapshot.close();
  }
});

it("leaves idempotency records out of what a replacement counts and deletes (found by review)", async () => {
  // They are outcomes of calls made, which expire on their own: counted, any client's keyed
  // mutations (a million live from a few addresses) kept the owner from replacing the deployment.
  const before = await env.db.store.snapshot();
  const counted = await existingKeys(before, "d").finally(() => before.close());
  await env.db.store.batch(
    Array.from({ length: 50 }, (_, i) => ({
      type: "put" as const,
      key: idempotencyRecordKey("d", 1, "anonymous:203.0.113.9", `key-${i}`),
      value: "hash\n1",
    })),
  );
  const after = await env.db.store.snapshot();
  try {
    const found = await existingKeys(after, "d");
    expect(found.keys.map((key) => key.toString("hex"))).toEqual(
      counted.keys.map((key) => key.toString("hex")),
    );
  } finally {
    await after.close();
  }
});
