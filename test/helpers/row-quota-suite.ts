/**
 * The row storage quota (host/db/row-bytes.ts) on any backend: a deployment's row bytes (each
 * row's JSON once for the row and once per index entry) are stored with every commit, equal a
 * tally of what the store holds after any mix of concurrent mutations, and a mutation that would
 * take them past the limit is refused with `quota_exceeded`, writing nothing, while deletes and
 * writes that shrink rows always go through.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { afterPrefix } from "../../host/db/codec.js";
import type { HostDatabase, TenantDatabase } from "../../host/db/index.js";
import { deploymentPrefixes, metaKey } from "../../host/db/keys.js";
import { valueBytes } from "../../host/db/row-bytes.js";
import type { SchemaSpec } from "../../sdk/values/index.js";

/** One table with a declared index: each row is stored three times (row, `by_creation`, `by_n`). */
export const QUOTA_SCHEMA: SchemaSpec = {
  tables: {
    t: {
      fields: {
        text: { kind: "string", optional: false },
        n: { kind: "number", optional: true },
      },
      indexes: { by_n: ["n"] },
    },
  },
};

/** {@link QUOTA_SCHEMA} with one more index (on `text`): the rows then take a third more. */
export const WIDER_SCHEMA: SchemaSpec = {
  tables: { t: { ...QUOTA_SCHEMA.tables.t!, indexes: { by_n: ["n"], by_text: ["text"] } } },
};

/**
 * What the deployment's rows and index entries hold, tallied from the store key by key (not by the
 * code under test): every value under its rows and its index entries.
 */
export async function tallyRowBytes(deployment: TenantDatabase): Promise<number> {
  let total = 0;
  for (const prefix of deploymentPrefixes(deployment.id).slice(0, 2))
    total += await valueBytes(deployment.store, prefix, afterPrefix(prefix));
  return total;
}

/** The row bytes the deployment has stored (undefined: none stored). */
export async function storedRowBytes(deployment: TenantDatabase): Promise<number | undefined> {
  const stored = await deployment.store.get(metaKey(deployment.id, "rowBytes"));
  return stored === undefined ? undefined : Number(stored);
}

/** Expects the stored row bytes to equal the tally, and returns them. */
export async function expectExact(deployment: TenantDatabase): Promise<number> {
  const tally = await tallyRowBytes(deployment);
  expect(await storedRowBytes(deployment)).toBe(tally);
  return tally;
}

/** How many rows table `t` holds. */
export async function rowCount(deployment: TenantDatabase): Promise<number> {
  const { value } = await deployment.query(async (tx) => {
    const outcome = await tx.query(
      { table: "t", index: "by_creation", range: [], order: "asc" },
      { kind: "count" },
    );
    return outcome.kind === "count" ? outcome.count : -1;
  });
  return value;
}

/** The ids of table `t`'s rows, oldest first. */
export async function rowIds(deployment: TenantDatabase): Promise<string[]> {
  const { value } = await deployment.query(async (tx) => {
    const outcome = await tx.query(
      { table: "t", index: "by_creation", range: [], order: "asc" },
      { kind: "collect" },
    );
    return outcome.kind === "rows" ? outcome.rows.map((json) => (JSON.parse(json) as { id: string }).id) : [];
  });
  return value;
}

/** Inserts one row of `text` in a mutation of its own. */
export function insertOne(deployment: TenantDatabase, text: string, n?: number): Promise<string> {
  return deployment
    .mutate((tx) => tx.insert("t", n === undefined ? { text } : { text, n }))
    .then((r) => r.value);
}

const QUOTA_REFUSAL = { code: "quota_exceeded", status: 413 };

/** The bytes a refused mutation would have added, as its message says (rows under 1 KiB). */
function refusedBytes(error: unknown): number {
  const added = /would add (\d+) bytes/.exec((error as Error).message)?.[1];
  expect(added).toBeDefined();
  return Number(added);
}

/**
 * The suite on a database from `open`, whose deployments may store `limit` row bytes each (fresh
 * for each test; `dispose` closes and removes it).
 */
export function rowQuotaSuite(
  name: string,
  open: (limit: number) => Promise<{ db: HostDatabase; dispose: () => Promise<void> }>,
  runs: number,
): void {
  describe(`${name}: row storage quota`, () => {
    it("refuses a mutation that would pass the limit with quota_exceeded, writing none of it", async () => {
      const { db, dispose } = await open(4000);
      try {
        const deployment = await db.deployment("full");
        await deployment.migrate(QUOTA_SCHEMA);
        expect(await expectExact(deployment)).toBe(0);
        const text = "x".repeat(100);
        let refusal: unknown;
        for (let i = 0; i < 100 && refusal === undefined; i++)
          await insertOne(deployment, text, i).catch((error: unknown) => {
            refusal = error;
          });
        expect(refusal).toMatchObject(QUOTA_REFUSAL);
        expect((refusal as Error).message).toMatch(
          /^This deployment stores 3\.\d\d KiB of rows and this mutation would add \d+ bytes, past its limit of 3\.91 KiB; delete rows to store more\.$/,
        );
        const used = await expectExact(deployment);
        // The rows stored fit; the one refused would not have.
        expect(used).toBeLessThanOrEqual(4000);
        expect(used + refusedBytes(refusal)).toBeGreaterThan(4000);
        expect(await rowCount(deployment)).toBeGreaterThan(3);

        // A mutation whose later write passes the limit is refused whole: its first write is not kept.
        const before = await rowIds(deployment);
        await expect(
          deployment.mutate(async (tx) => {
            await tx.delete("t", before[0]!);
            await tx.insert("t", { text });
            await tx.insert("t", { text });
          }),
        ).rejects.toMatchObject(QUOTA_REFUSAL);
        expect(await rowIds(deployment)).toEqual(before);
        expect(await expectExact(deployment)).toBe(used);
        // Writes that keep the bytes go through at the limit.
        await deployment.mutate((tx) => tx.update("t", before[0]!, { text: "y".repeat(100) }));
        expect(await expectExact(deployment)).toBe(used);
      } finally {
        await dispose();
      }
    });

    it("lets deletes and shrinking patches through past the limit, which frees bytes for writes again", async () => {
      const { db, dispose } = await open(4000);
      try {
        const deployment = await db.deployment("over");
        await deployment.migrate(QUOTA_SCHEMA);
        const text = "x".repeat(100);
        for (let i = 0; i < 7; i++) await insertOne(deployment, text, i);
        const fits = await expectExact(deployment);
        expect(fits).toBeLessThanOrEqual(4000);
        // A deploy adding an index is never refused: now the rows take more than the limit.
        await deployment.migrate(WIDER_SCHEMA);
        const over = await expectExact(deployment);
        expect(over).toBeGreaterThan(4000);
        const ids = await rowIds(deployment);

        await expect(insertOne(deployment, "a")).rejects.toMatchObject(QUOTA_REFUSAL);
        await expect(
          deployment.mutate((tx) => tx.update("t", ids[0]!, { text: `${text}more` })),
        ).rejects.toMatchObject(QUOTA_REFUSAL);
        expect(await expectExact(deployment)).toBe(over);

        // Smaller rows and deletes: allowed, still over the limit.
        await deployment.mutate((tx) => tx.update("t", ids[0]!, { text: "s".repeat(60) }));
        const shrunk = await expectExact(deployment);
        expect(shrunk).toBeLessThan(over);
        expect(shrunk).toBeGreaterThan(4000);
        await deployment.mutate((tx) => tx.delete("t", ids[1]!));
        expect(await expectExact(deployment)).toBeLessThan(shrunk);

        // Freed below the limit, a row that fits is stored again.
        await deployment.mutate(async (tx) => {
          for (const id of ids.slice(2, 5)) await tx.delete("t", id);
        });
        const freed = await expectExact(deployment);
        expect(freed).toBeLessThan(4000);
        await insertOne(deployment, "fits");
        expect(await expectExact(deployment)).toBeGreaterThan(freed);
      } finally {
        await dispose();
      }
    });

    it("refuses, of mutations committed together, those that no longer fit after the ones before", async () => {
      const { db, dispose } = await open(6000);
      try {
        const deployment = await db.deployment("group");
        await deployment.migrate(QUOTA_SCHEMA);
        const text = "z".repeat(150);
        // Queued together: one group commit, each member reading the writes of those before it.
        const outcomes = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => insertOne(deployment, text, i)),
        );
        const stored = outcomes.filter((o) => o.status === "fulfilled").length;
        const refused = outcomes.filter((o) => o.status === "rejected");
        expect(stored).toBeGreaterThan(0);
        expect(refused.length).toBeGreaterThan(0);
        for (const o of refused) expect((o as PromiseRejectedResult).reason).toMatchObject(QUOTA_REFUSAL);
        expect(await rowCount(deployment)).toBe(stored);
        const used = await expectExact(deployment);
        expect(used).toBeLessThanOrEqual(6000);
        for (const o of refused)
          expect(used + refusedBytes((o as PromiseRejectedResult).reason)).toBeGreaterThan(6000);
      } finally {
        await dispose();
      }
    });

    it("keeps the stored total equal to what the store holds after random writes in concurrent mutations", async () => {
      const { db, dispose } = await open(1024 * 1024);
      let run = 0;
      const op = fc.oneof(
        fc.record({ kind: fc.constant("insert" as const), size: fc.nat(300), n: fc.option(fc.nat(5)) }),
        fc.record({
          kind: fc.constant("update" as const),
          at: fc.nat(),
          size: fc.option(fc.nat(300)),
          n: fc.option(fc.nat(5)),
        }),
        fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
      );
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { maxLength: 8 }),
            async (groups) => {
              const deployment = await db.deployment(`random${run++}`);
              await deployment.migrate(QUOTA_SCHEMA);
              const live: string[] = [];
              await Promise.all(
                groups.map((ops) =>
                  deployment.mutate(async (tx) => {
                    for (const step of ops) {
                      if (step.kind === "insert") {
                        const row = step.n === null ? {} : { n: step.n };
                        live.push(await tx.insert("t", { text: "é".repeat(step.size), ...row }));
                      } else if (live.length > 0) {
                        const id = live[step.at % live.length] as string;
                        if (step.kind === "delete") {
                          await tx.delete("t", id);
                          live.splice(live.indexOf(id), 1);
                        } else {
                          const patch = step.size === null ? {} : { text: "ü".repeat(step.size) };
                          await tx.update("t", id, { ...patch, n: step.n });
                        }
                      }
                    }
                  }),
                ),
              );
              const stored = await storedRowBytes(deployment);
              expect(stored ?? 0).toBe(await tallyRowBytes(deployment));
            },
          ),
          { numRuns: runs },
        );
      } finally {
        await dispose();
      }
    });
  });
}
