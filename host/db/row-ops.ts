/**
 * The row-level steps of a transaction's point operations, shared by its fast path and its
 * asynchronous methods: finding and charging a row, checking references, and writing a row with
 * its index entries and count changes into the overlay.
 */
import { isRowIdShape, PlatformError } from "../../sdk/values/index.js";
import { NOT_READY, type NotReady } from "./fast-path.js";
import { rowKeyUnder } from "./keys.js";
import { heldBytesOf, tryHeldBytesSync, writtenBytes } from "./row-bytes.js";
import {
  checkNewIndexKeys,
  indexEntries,
  keyBytesOf,
  materializeJson,
  parseStoredRow,
  type StoredRow,
} from "./rows.js";
import type { CompiledTable } from "./stored-schema.js";
import type { TransactionView } from "./transaction-view.js";

/** The row key `get(id)` reads; null for an id that cannot name a row. */
export function pointKey(table: CompiledTable, id: string): Buffer | null {
  if (isRowIdShape(id)) return rowKeyUnder(table.rowPrefix, id);
  if (typeof id !== "string")
    throw new PlatformError("bad_request", `get() on ${table.name} needs an id string.`);
  return null;
}

/** A row `get` found (null: none), charged to `tx`'s budgets, as handlers see it. */
export function chargeRow(
  tx: Pick<TransactionView, "budget">,
  table: CompiledTable,
  json: string | null,
): string | null {
  if (json === null) return null;
  tx.budget.read(Buffer.byteLength(json));
  tx.budget.returned(1);
  return materializeJson(table, json);
}

/** A row's `id()` field naming a row of another table: `[field, table, id]`. */
type Reference = [field: string, table: string, id: string];

/** A stored row about to be rewritten or removed, with the bytes it holds now (row-bytes.ts). */
export interface ExistingRow {
  row: StoredRow;
  bytes: number;
}

/** The stored row `id` of `table` for `verb`, from its JSON; a missing row is `not_found`. */
function parseExisting(
  tx: TransactionView,
  table: CompiledTable,
  id: string,
  json: string | null,
  verb: string,
): StoredRow {
  if (json === null)
    throw new PlatformError("not_found", `Cannot ${verb}: no row ${String(id)} in table ${table.name}.`);
  // A legacy deployment keeps rows as stored; v1 reads them (and so writes them back) in v1 form.
  return tx.host.legacy ? (JSON.parse(json) as StoredRow) : parseStoredRow(json);
}

/** {@link existingRow} at once, or NOT_READY when an index entry it may lack must be read. */
export function tryExistingRowSync(
  tx: TransactionView,
  table: CompiledTable,
  id: string,
  json: string | null,
  verb: string,
): ExistingRow | NotReady {
  const row = parseExisting(tx, table, id, json, verb);
  const bytes = tryHeldBytesSync(tx, table, json as string, row);
  return bytes === NOT_READY ? NOT_READY : { row, bytes };
}

/**
 * The stored row `id` of `table` for `verb`, from its JSON (a missing row is `not_found`), with
 * the bytes it holds.
 */
export async function existingRow(
  tx: TransactionView,
  table: CompiledTable,
  id: string,
  json: string | null,
  verb: string,
): Promise<ExistingRow> {
  const row = parseExisting(tx, table, id, json, verb);
  return { row, bytes: await heldBytesOf(tx, table, json as string, row) };
}

function referenced([field, target, id]: Reference, json: string | null, tableName: string): void {
  if (json === null)
    throw new PlatformError(
      "bad_request",
      `Invalid value for ${tableName}.${field}: no row ${id} in table ${target}.`,
    );
}

function referenceKey(tx: TransactionView, [, target, id]: Reference): Buffer {
  return rowKeyUnder(tx.table(target).rowPrefix, id);
}

/** Checks at once that every referenced row exists; false when a read must wait. */
export function tryCheckReferencesSync(tx: TransactionView, refs: Reference[], tableName: string): boolean {
  // Counted only once all are answered at once; else checkReferences counts them.
  tx.budget.checksReferences(refs.length, false);
  for (const ref of refs) {
    const json = tx.tryReadKeySync(referenceKey(tx, ref));
    if (json === NOT_READY) return false;
    referenced(ref, json, tableName);
  }
  tx.budget.checksReferences(refs.length);
  return true;
}

/** Checks that every referenced row exists. */
export async function checkReferences(
  tx: TransactionView,
  refs: Reference[],
  tableName: string,
): Promise<void> {
  tx.budget.checksReferences(refs.length);
  for (const ref of refs) referenced(ref, await tx.readKey(referenceKey(tx, ref)), tableName);
}

/**
 * Writes `row` and its index entries into `tx`'s overlay (replacing `existing`'s), and notes how
 * the counts of the entries that appear or go move (see stored-counts.ts) and how the row bytes
 * move (row-bytes.ts). Every write counts against the transaction's write budget, which bounds
 * the memory it holds until the commit; one the host makes on its own behalf (`byHandler` false:
 * a guest upgrade's reassignment of the guest's rows) never gets it refused for the row quota.
 */
export function writeRow(
  tx: TransactionView,
  table: CompiledTable,
  row: StoredRow,
  existing: ExistingRow | null,
  byHandler = true,
): void {
  tx.budget.mayWrite();
  const json = JSON.stringify(row);
  const next = indexEntries(table, row);
  const previous = existing?.row;
  // An insert's entries are all new; an update's are compared with the row's entries now.
  const nextNames = previous ? next.map((entry) => entry.key.toString("latin1")) : [];
  const previousEntries = previous ? indexEntries(table, previous) : [];
  const had = new Set(previousEntries.map((entry) => entry.key.toString("latin1")));
  // Before anything is written: a handler that catches the refusal goes on with a whole view.
  checkNewIndexKeys(table, next, (_, at) => !previous || !had.has(nextNames[at] as string));
  // Each index entry stores a copy of the row: the bytes written are the row's, once per entry.
  // The budget also counts the keys the mutation holds until its commit (keyBytesOf): an
  // update's removed entries and the counts they move too.
  const bytes = writtenBytes(json, next.length);
  const keep = new Set(nextNames);
  const removed = previousEntries.filter((entry) => !keep.has(entry.key.toString("latin1")));
  tx.budget.wrote(bytes + keyBytesOf(next) + keyBytesOf(removed));
  tx.rowBytes.note(bytes - (existing?.bytes ?? 0), byHandler);
  const overlay = tx.overlay;
  overlay.set(rowKeyUnder(table.rowPrefix, row.id), json);
  if (!previous) {
    for (const entry of next) {
      overlay.set(entry.key, json);
      tx.noteCounts(entry, 1);
    }
    return;
  }
  for (const entry of removed) {
    overlay.set(entry.key, null);
    tx.noteCounts(entry, -1);
  }
  next.forEach((entry, i) => {
    overlay.set(entry.key, json);
    if (!had.has(nextNames[i] as string)) tx.noteCounts(entry, 1);
  });
}

/** Removes `existing` and its index entries from `tx`'s view, and notes them off their counts and the row bytes. */
export function removeRow(tx: TransactionView, table: CompiledTable, existing: ExistingRow): void {
  const row = existing.row;
  const entries = indexEntries(table, row);
  tx.budget.wrote(keyBytesOf(entries));
  tx.rowBytes.note(-existing.bytes);
  tx.overlay.set(rowKeyUnder(table.rowPrefix, row.id), null);
  for (const entry of entries) {
    tx.overlay.set(entry.key, null);
    tx.noteCounts(entry, -1);
  }
}
