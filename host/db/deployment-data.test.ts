/**
 * An import is refused before it is built when it would write more than one batch may hold in the
 * host's memory: more rows and index entries than LIMITS.importOperations, or (stopping as soon as
 * it passes) more row bytes than the deployment may store.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { capsule, string, table } from "../../sdk/server/index.js";
import { tempDatabase } from "../../test/helpers/db.js";
import { type DeploymentData, dataOperations, readDataHead, tableRows } from "./deployment-data.js";

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

it("refuses more rows and index entries than one import may write, before building any", () => {
  const limits = LIMITS as { importOperations: number };
  const kept = limits.importOperations;
  try {
    // 10 rows, each with an entry in its table's creation index and the two declared ones.
    const { operations } = dataOperations("d", data);
    const writes = operations.filter((op) => op.type === "put").length;
    expect(writes).toBeGreaterThan(10 * 3);
    limits.importOperations = 10 * 4;
    expect(() => dataOperations("d", data)).not.toThrow();
    limits.importOperations = 10 * 4 - 1;
    expect(() => dataOperations("d", data)).toThrow(expect.objectContaining({ code: "quota_exceeded" }));
  } finally {
    limits.importOperations = kept;
  }
});

it("stops building as soon as the row bytes pass the deployment's limit", () => {
  const { rowBytes } = dataOperations("d", data);
  expect(() => dataOperations("d", data, rowBytes)).not.toThrow();
  expect(() => dataOperations("d", data, rowBytes - 1)).toThrow(
    expect.objectContaining({ code: "quota_exceeded" }),
  );
});
