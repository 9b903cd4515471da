/**
 * Transaction operations only the host runs, never a handler's `ctx.db`: the guest upgrade's
 * reassignment of a user's rows, and the legacy (v0) snapshot runtime's whole-table reads and
 * write lists.
 */
import type { LegacyWrite } from "../../sdk/protocol/index.js";
import { isRowIdShape, PlatformError } from "../../sdk/values/index.js";
import { afterPrefix, decodeText, encodeNumber } from "./codec.js";
import { rowKeyUnder } from "./keys.js";
import { compileRange } from "./range.js";
import { checkReferences, existingRow, writeRow } from "./row-ops.js";
import { applyPatch, buildInsertFields, changedIdFields, type StoredRow } from "./rows.js";
import { scanRange } from "./scan.js";
import { userIndexName } from "./stored-schema.js";
import type { TransactionView } from "./transaction-view.js";

/** The bytes of an encoded number: an index key's `createdAt`. */
const CREATED_AT_BYTES = encodeNumber(0).length;

/**
 * Every row of `table` whose `userId()` field `field` equals `from` gets `to` instead. Found through
 * the field's hidden index, never a table scan, and counted as one index scan of the handler's
 * budget. The ids come from the index keys alone, so no row is read before it is moved: the moves
 * count against the transaction's write budget (they are held in memory until the commit, as a
 * mutation's writes are), which stops the upgrade at its first row past the budget's rows or
 * bytes. Returns how many rows moved.
 */
export async function reassignUserId(
  tx: TransactionView,
  tableName: string,
  field: string,
  from: string,
  to: string,
): Promise<number> {
  tx.requireWrite();
  const table = tx.table(tableName);
  const index = table.indexes.get(userIndexName(field));
  if (!index) throw new PlatformError("internal", `${table.name}.${field} has no user index.`);
  const range = compileRange(table, index, [{ op: "eq", field, value: from }]);
  tx.budget.scanned(range.start.length + range.end.length);
  const room = tx.budget.limits.rowsWritten - tx.budget.usage.writes;
  // An entry's key is the range's prefix (the index and the value), `createdAt`, then the id.
  const idAt = range.start.length + CREATED_AT_BYTES;
  const ids: string[] = [];
  await scanRange(
    tx.snapshot,
    tx.overlay,
    {
      start: range.start,
      end: range.end,
      reverse: false,
      values: false,
      keys: true,
      hint: 256,
      want: room + 1,
    },
    (key) => {
      ids.push(decodeText(key, idAt).value);
      return ids.length <= room;
    },
  );
  if (ids.length > room) throw tx.budget.exceeded("rowsWritten");
  for (const id of ids) {
    // The row as stored (an entry of a legacy row holds its v1 form), for the bytes it holds.
    const before = await existingRow(
      tx,
      table,
      id,
      await tx.readKey(rowKeyUnder(table.rowPrefix, id)),
      "update",
    );
    // biome-ignore lint/plugin: a stored row's keys are not ours to trust (Object.assign would let a "__proto__" key set the prototype); rare (guest upgrade)
    writeRow(tx, table, { ...before.row, [field]: to } as StoredRow, before, false);
  }
  return ids.length;
}

/**
 * Every row of a table, in key order, as stored. Each row counts as read (rows and bytes shipped
 * into the isolate are reads, docs/capsules.md "Versioning"), and the whole table joins the read set.
 */
export async function legacyTable(tx: TransactionView, tableName: string): Promise<string[]> {
  tx.requireOpen();
  const table = tx.table(tableName);
  const start = table.rowPrefix;
  const end = afterPrefix(start);
  const rows: string[] = [];
  tx.budget.scanned(start.length + end.length);
  tx.readSet.ranges.push({ start, end });
  await scanRange(
    tx.snapshot,
    tx.overlay,
    { start, end, reverse: false, values: true, keys: false, hint: 1000, want: Infinity },
    (_key, value) => {
      tx.budget.read(Buffer.byteLength(value));
      rows.push(value);
      return true;
    },
  );
  return rows;
}

/**
 * Applies a finished legacy handler's writes. Inserts may only use ids the host issued for this run
 * (`issued`), get a host-assigned ISO `createdAt`, and are validated like any insert; updates and
 * deletes need the row to exist.
 */
export async function applyLegacyWrites(
  tx: TransactionView,
  writes: readonly LegacyWrite[],
  issued: ReadonlySet<string>,
): Promise<void> {
  tx.requireWrite();
  if (!Array.isArray(writes)) throw new PlatformError("internal", "Malformed legacy writes.");
  for (const write of writes) {
    const table = tx.table(write?.table);
    if (write.op === "insert") {
      const { id, createdAt: _ignored, ...input } = (write.row ?? {}) as Record<string, unknown>;
      if (
        typeof id !== "string" ||
        !issued.has(id) ||
        (await tx.readKey(rowKeyUnder(table.rowPrefix, id))) !== null
      )
        throw new PlatformError("forbidden", "A legacy insert used an id the host did not issue.");
      const fields = buildInsertFields(table, input);
      await checkReferences(tx, changedIdFields(table, fields), table.name);
      tx.insertRow(table, fields, id, true);
    } else if (write.op === "update") {
      const json = isRowIdShape(write.id) ? await tx.readKey(rowKeyUnder(table.rowPrefix, write.id)) : null;
      const before = await existingRow(tx, table, write.id, json, "update");
      const after = applyPatch(table, before.row, write.patch);
      await checkReferences(tx, changedIdFields(table, after, before.row), table.name);
      writeRow(tx, table, after, before);
    } else if (write.op === "delete") {
      await tx.delete(table.name, write.id);
    } else throw new PlatformError("internal", "Malformed legacy write.");
  }
}
