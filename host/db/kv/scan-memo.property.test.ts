/**
 * Property test: any sequence of writes (puts, deletes, clears), reads (scans of random ranges in
 * both directions, taking a few entries or all) and snapshots held across writes, on the embedded
 * store. Whatever a snapshot's memo answers at once is what that snapshot holds, checked against a
 * model of the store at the snapshot's moment.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import { NOT_READY } from "../fast-path.js";
import { ClassicKv } from "./classic-kv.js";
import type { KvIterateOptions, KvSnapshot } from "./kv.js";

const KEYS = ["a", "b", "c", "d", "e", "f", "g", "h"];

type Op =
  | { kind: "put"; keys: string[]; value: string }
  | { kind: "del"; key: string }
  | { kind: "clear"; from: string; to: string }
  | { kind: "read"; from: string; to: string; reverse: boolean; take: number; held: number }
  | { kind: "hold" }
  | { kind: "release"; held: number };

const key = fc.constantFrom(...KEYS);
// Reads weigh most, over a few ranges, so that many are answered from a memo kept across writes.
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("put" as const),
      keys: fc.array(key, { minLength: 1, maxLength: 3 }),
      value: fc.string({ maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("del" as const), key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("clear" as const), from: key, to: key }) },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("read" as const),
      from: fc.constantFrom("a", "c", "f"),
      to: fc.constantFrom("d", "h", "z"),
      reverse: fc.boolean(),
      take: fc.integer({ min: 1, max: 9 }),
      held: fc.integer({ min: -1, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("hold" as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("release" as const), held: fc.integer({ min: 0, max: 2 }) }),
  },
);

/** The entries of `range` in `state`, in scan order. */
function modelScan(
  state: Map<string, string>,
  from: string,
  to: string,
  reverse: boolean,
): Array<[string, string]> {
  const entries = [...state.entries()]
    .filter(([k]) => k >= from && k < to)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return reverse ? entries.reverse() : entries;
}

async function scan(
  snapshot: KvSnapshot,
  options: KvIterateOptions,
  take: number,
): Promise<Array<[string, string]>> {
  const iterator = snapshot.iterate(options);
  const seen: Array<[string, string]> = [];
  try {
    while (seen.length < take) {
      const batch = await iterator.next(take - seen.length);
      if (batch.length === 0) break;
      for (const [k, v] of batch) seen.push([k.toString(), v]);
    }
  } finally {
    await iterator.close();
  }
  return seen;
}

it("a snapshot's memo answers only with what the snapshot holds", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 20, maxLength: 60 }), async (ops) => {
      const dir = await mkdtemp(join(tmpdir(), "platform-memo-prop-"));
      const store = await ClassicKv.open(dir);
      const state = new Map<string, string>();
      const held: Array<{ snapshot: KvSnapshot; state: Map<string, string> }> = [];
      try {
        for (const step of ops) {
          if (step.kind === "put") {
            await store.batch(
              step.keys.map((k) => ({ type: "put" as const, key: Buffer.from(k), value: step.value })),
            );
            for (const k of step.keys) state.set(k, step.value);
          } else if (step.kind === "del") {
            await store.batch([{ type: "del", key: Buffer.from(step.key) }]);
            state.delete(step.key);
          } else if (step.kind === "clear") {
            await store.clear({ gte: Buffer.from(step.from), lt: Buffer.from(step.to) });
            for (const k of [...state.keys()]) if (k >= step.from && k < step.to) state.delete(k);
          } else if (step.kind === "hold") {
            held.push({ snapshot: await store.readSnapshot(), state: new Map(state) });
          } else if (step.kind === "release") {
            const [gone] = held.splice(step.held, 1);
            await gone?.snapshot.close();
          } else {
            const fromHeld = held[step.held];
            const reader = fromHeld ?? { snapshot: await store.readSnapshot(), state };
            const options = { gte: Buffer.from(step.from), lt: Buffer.from(step.to), reverse: step.reverse };
            const expected = modelScan(reader.state, step.from, step.to, step.reverse);
            const kept = reader.snapshot.tryScanSync?.(options, step.take);
            if (kept !== undefined && kept !== NOT_READY) {
              const answered = kept.entries.slice(0, step.take).map(([k, v]) => [k.toString(), v]);
              expect(answered).toEqual(expected.slice(0, step.take));
            }
            expect(await scan(reader.snapshot, options, step.take)).toEqual(expected.slice(0, step.take));
            if (!fromHeld) await reader.snapshot.close();
          }
        }
      } finally {
        for (const { snapshot } of held) await snapshot.close();
        await store.close();
        await rm(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: 150 },
  );
});
