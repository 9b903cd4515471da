/**
 * One mutation that moves more stored counts than a JavaScript call can take as arguments, on any
 * backend (test/helpers/count-suite.ts runs it): 4,500 rows into 8 indexes of 4 fields, every value
 * distinct, move 144,000 counts at once. A spread of them into one array's push overflowed the
 * stack ("Maximum call stack size exceeded") and the mutation failed. Its operations are made a
 * few thousand per turn of the event loop, leaving the turns between to other tenants' calls.
 */
import { expect, it, vi } from "vitest";
import type { HostDatabase } from "../../host/db/index.js";
import type { RangeOp } from "../../sdk/protocol/index.js";
import type { SchemaSpec } from "../../sdk/values/index.js";

/** The case, in the caller's describe; `open` gives a fresh database. */
export function manyCountsCase(
  open: () => Promise<{ db: HostDatabase; dispose: () => Promise<void> }>,
): void {
  it("are all stored by a mutation that moves more of them than a call can take as arguments", async () => {
    const { db, dispose } = await open();
    try {
      const fields = ["f0", "f1", "f2", "f3"];
      const indexes = Object.fromEntries(
        Array.from({ length: 8 }, (_, j) => [`i${j}`, fields.map((_, i) => fields[(i + j) % 4] as string)]),
      );
      const schema: SchemaSpec = {
        tables: {
          t: {
            fields: Object.fromEntries(fields.map((f) => [f, { kind: "number", optional: false }])),
            indexes,
          },
        },
      };
      const deployment = await db.deployment("many-counts");
      await deployment.migrate(schema);
      const rows = 4500;
      // Turns of the event loop other work gets between the handler's end and the commit's start.
      let turns = 0;
      let handlerEnded = -1;
      let commitStarted = -1;
      const commit = db.store.commit.bind(db.store);
      const spy = vi.spyOn(db.store, "commit").mockImplementation((...args) => {
        commitStarted = turns;
        return commit(...args);
      });
      let done = false;
      const turn = () => {
        turns++;
        if (!done) setImmediate(turn);
      };
      setImmediate(turn);
      try {
        await deployment.mutate(async (tx) => {
          for (let n = 0; n < rows; n++)
            await tx.insert("t", { f0: 4 * n, f1: 4 * n + 1, f2: 4 * n + 2, f3: 4 * n + 3 });
          handlerEnded = turns;
        });
      } finally {
        done = true;
        spy.mockRestore();
      }
      // Its 184,500 operations are made 2,000 a turn (they held every tenant's calls 20-30 ms at once).
      expect(commitStarted - handlerEnded).toBeGreaterThanOrEqual(50);
      const { value: counts } = await deployment.query(async (tx) => {
        const count = async (index: string, range: RangeOp[]) => {
          const outcome = await tx.query({ table: "t", index, range, order: "asc" }, { kind: "count" });
          return outcome.kind === "count" ? outcome.count : -1;
        };
        return [
          await count("i0", []),
          await count("i0", [{ op: "eq", field: "f0", value: 400 }]),
          await count("i3", [
            { op: "eq", field: "f3", value: 4 * 4499 + 3 },
            { op: "eq", field: "f0", value: 4 * 4499 },
          ]),
          await count("i1", [{ op: "eq", field: "f1", value: 2 }]),
        ];
      });
      expect(counts).toEqual([rows, 1, 1, 0]);
    } finally {
      await dispose();
    }
  }, 120_000);
}
