/**
 * Stored counts. A counted index keeps, under a count key (keys.ts), how many entries lie under
 * each prefix of equalities on its leading fields; `by_creation`'s whole-index count is the table's
 * size. Writes note how each count moves (`Transaction.noteCounts`); a group commit adds up the
 * moves of its members and stores each count it moved once per batch, read once and written with
 * the sum of the moves, 0 deleting it (writers are serialized, so no other writer moves it
 * meanwhile). A count read in between is the stored count plus the moves not stored yet.
 */
import { CREATION_INDEX } from "../../sdk/values/index.js";
import { NOT_READY } from "./fast-path.js";
import { countKeyOf } from "./keys.js";
import type { KvOperation, KvSnapshot } from "./kv/index.js";
import type { IndexRange } from "./range.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";

/**
 * The stored count that answers `range`, if any: equalities on leading fields of a counted
 * index, or none at all (the table's size, kept by `by_creation`).
 */
export function countKeyFor(
  table: CompiledTable,
  index: CompiledIndex,
  range: IndexRange,
): Buffer | undefined {
  if (range.bounded || range.equalities > index.fields.length) return undefined;
  if (range.equalities === 0) {
    const creation = table.indexes.get(CREATION_INDEX);
    return creation?.counted ? countKeyOf(creation.prefix) : undefined;
  }
  return index.counted ? countKeyOf(range.start) : undefined;
}

/**
 * The writes that store `moves` (count name -> how the group's members moved it since `snapshot`),
 * reading every count they move at once: a store that reads over the network asks for all of them
 * in one round trip, once per group commit instead of once per member that moved a new count.
 * Nothing else writes a count while the group holds the write lock, so stored plus moved is exact.
 */
export async function countWrites(
  snapshot: KvSnapshot,
  moves: ReadonlyArray<readonly [string, number]>,
): Promise<KvOperation[]> {
  const moved = moves.filter(([, delta]) => delta !== 0);
  const keys = moved.map(([name]) => Buffer.from(name, "latin1"));
  const stored = await Promise.all(
    keys.map((key) => {
      const now = snapshot.tryGetSync(key);
      return now === NOT_READY ? snapshot.get(key) : now;
    }),
  );
  return moved.map(([, delta], i): KvOperation => {
    const key = keys[i] as Buffer;
    const n = Number(stored[i] ?? 0) + delta;
    return n > 0 ? { type: "put", key, value: String(n) } : { type: "del", key };
  });
}
