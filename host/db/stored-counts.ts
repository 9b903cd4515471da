/**
 * Stored counts. A counted index keeps, under a count key (keys.ts), how many entries lie under
 * each prefix of equalities on its leading fields; `by_creation`'s whole-index count is the table's
 * size. Writes note how each count moves (`Transaction.noteCounts`); a group commit adds up the
 * moves of its members and stores each count it moved once per batch, as an add of the sum that
 * the store applies where the write lands, 0 deleting it (writers are serialized, so no other
 * writer moves it meanwhile). A count read in between is the stored count plus the moves not
 * stored yet.
 */
import { CREATION_INDEX } from "../../sdk/values/index.js";
import { countKeyOf } from "./keys.js";
import type { KvOperation } from "./kv/index.js";
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
 * The writes that store `moves` (count name -> how the group's members moved it since its last
 * batch): an add per count moved, which the store applies to the stored count where the write
 * lands (kv.ts), so a group commit reads no count before its batch. Nothing else writes a count
 * while the group holds the write lock, so stored plus moved is exact.
 */
export function* countWrites(moves: Iterable<readonly [string, number]>): Generator<KvOperation> {
  for (const [name, delta] of moves)
    if (delta !== 0) yield { type: "add", key: Buffer.from(name, "latin1"), delta };
}
