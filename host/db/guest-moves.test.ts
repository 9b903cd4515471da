/**
 * A guest upgrade's move of rows (`Transaction.reassignUserId`): each `userId()` field's search
 * counts as one index scan of the budget, the ids come from the index keys, and no row is read
 * that the write budget will not let it move.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { capsule, string, table, userId } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import { DEFAULT_BUDGET } from "./budget.js";
import type { TenantDatabase } from "./index.js";

const app = capsule({
  schema: {
    notes: table({ text: string(), owner: userId(), reviewer: userId().optional() }),
    other: table({ owner: userId() }),
  },
});

let env: Awaited<ReturnType<typeof tempDatabase>>;
let deployment: TenantDatabase;

beforeEach(async () => {
  env = await tempDatabase();
  deployment = await env.db.deployment("g");
  await deployment.migrate(app.declaration.schema);
});
afterEach(() => env.dispose());

/** The owners of every note, in id order. */
async function owners(): Promise<string[]> {
  const { value } = await typedDb(deployment, app).read((db) => db.notes.collect());
  return value.map((row) => row.owner);
}

describe("a guest upgrade's move of rows", () => {
  it("finds rows by their index keys, its own pending inserts included, and counts one scan per field", async () => {
    await deployment.mutate(async (tx) => {
      for (let i = 0; i < 3; i++) await tx.insert("notes", { text: `n${i}`, owner: "guest:a" });
      await tx.insert("notes", { text: "theirs", owner: "guest:b" });
    });
    const { value } = await deployment.mutate(async (tx) => {
      await tx.insert("notes", { text: "pending", owner: "guest:a" });
      const before = tx.budget.usage.indexScans;
      const moved =
        (await tx.reassignUserId("notes", "owner", "guest:a", "user:1")) +
        (await tx.reassignUserId("notes", "reviewer", "guest:a", "user:1")) +
        (await tx.reassignUserId("other", "owner", "guest:a", "user:1"));
      return { moved, scans: tx.budget.usage.indexScans - before };
    });
    expect(value).toEqual({ moved: 4, scans: 3 });
    expect(await owners()).toEqual(["user:1", "user:1", "user:1", "guest:b", "user:1"]);
  });

  it("stops at the budget's index scans, and nothing moves", async () => {
    await deployment.mutate((tx) => tx.insert("notes", { text: "n", owner: "guest:a" }));
    const budget = Object.assign({}, DEFAULT_BUDGET, { rangesRead: 2 });
    await expect(
      deployment.mutate(
        async (tx) => {
          await tx.reassignUserId("notes", "owner", "guest:a", "user:1");
          await tx.reassignUserId("notes", "reviewer", "guest:a", "user:1");
          await tx.reassignUserId("other", "owner", "guest:a", "user:1");
        },
        { budget },
      ),
    ).rejects.toMatchObject({ code: "limit_exceeded", message: "Database rangesRead limit exceeded (2)." });
    expect(await owners()).toEqual(["guest:a"]);
  });

  it("reads no row past the one the write budget refuses", async () => {
    // Before, the search parsed every row it found (up to the budget's 8,192 rows) before the
    // first move checked any bytes: 240 MB a sign-in with rows of 240 KB.
    const text = "x".repeat(20_000);
    await deployment.mutate(async (tx) => {
      for (let i = 0; i < 30; i++) await tx.insert("notes", { text, owner: "guest:a" });
    });
    const budget = Object.assign({}, DEFAULT_BUDGET, { bytesWritten: 100_000 });
    const parse = vi.spyOn(JSON, "parse");
    try {
      await expect(
        deployment.mutate((tx) => tx.reassignUserId("notes", "owner", "guest:a", "user:1"), { budget }),
      ).rejects.toMatchObject({
        code: "limit_exceeded",
        message: "Database bytesWritten limit exceeded (100000).",
      });
      const rowsParsed = parse.mock.calls.filter(
        ([json]) => typeof json === "string" && json.length > 20_000,
      );
      // Each row moved is written three times (the row, by_creation, the owner's index): one row
      // fits in 100,000 bytes, the second is refused.
      expect(rowsParsed.length).toBeLessThanOrEqual(2);
    } finally {
      parse.mockRestore();
    }
    expect(new Set(await owners())).toEqual(new Set(["guest:a"]));
  });
});
