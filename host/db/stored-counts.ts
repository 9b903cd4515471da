/**
 * Stored counts. A counted index keeps, under a count key (keys.ts), how many entries lie under
 * each prefix of equalities on its leading fields; `by_creation`'s whole-index count is the table's
 * size. Writes note how each count moves (`Transaction.noteCounts`); the notes are applied at the
 * end, each count read once (through the transaction's writes; writers are serialized, so no other
 * writer moves it meanwhile) and written once with the sum of its changes, 0 deleting it. A batch
 * of inserts into one list so moves that list's count once, not once per row.
 */
import { CREATION_INDEX } from "../../sdk/values/index.js";
import { NOT_READY } from "./fast-path.js";
import { countKeyOf } from "./keys.js";
import type { IndexRange } from "./range.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";
import type { TransactionView } from "./transaction-view.js";

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

function applyOne(tx: TransactionView, key: Buffer, stored: string | null, delta: number): void {
  const n = (stored === null ? 0 : Number(stored)) + delta;
  tx.overlay.set(key, n > 0 ? String(n) : null);
}

/**
 * Applies `changes` (count name -> delta) while every count can be read at once, removing each
 * applied one; false when one must be read from the store (the rest are left in `changes`).
 */
export function tryApplyCountChangesSync(tx: TransactionView, changes: Map<string, number>): boolean {
  for (const [name, delta] of changes) {
    if (delta !== 0) {
      const key = Buffer.from(name, "latin1");
      const stored = tx.tryReadKeySync(key);
      if (stored === NOT_READY) return false;
      applyOne(tx, key, stored, delta);
    }
    changes.delete(name);
  }
  return true;
}

/**
 * Applies every change of `changes`, reading the counts it must from the store at once (a store
 * that reads over the network asks for them together); empties it.
 */
export async function applyCountChanges(tx: TransactionView, changes: Map<string, number>): Promise<void> {
  const moves = [...changes].filter(([, delta]) => delta !== 0);
  changes.clear();
  const keys = moves.map(([name]) => Buffer.from(name, "latin1"));
  const stored = await Promise.all(
    keys.map((key) => {
      const now = tx.tryReadKeySync(key);
      return now === NOT_READY ? tx.readKey(key) : now;
    }),
  );
  moves.forEach(([, delta], i) => {
    applyOne(tx, keys[i] as Buffer, stored[i] as string | null, delta);
  });
}
