/**
 * What a group commit reads for its members before the first one runs, where every read is a round
 * trip (PostgreSQL): the keys each member names (its session and idempotency records) and the row
 * of every id-shaped string in its arguments (when they are short), under each table. They go in ONE message, with the snapshot's
 * BEGIN. The snapshot answers a key it has read before at once, so a member then finds its session,
 * the list it inserts into or the row it updates there, instead of waiting a round trip for each,
 * one member after another, under the write lock. A guess that names no row costs one key in that
 * message. What a handler sees, and is charged for, is unchanged: the same snapshot answers it.
 */
import { isRowIdShape } from "../../sdk/values/index.js";
import { rowKeyUnder } from "./keys.js";
import type { KvSnapshot } from "./kv/index.js";
import type { CompiledTable } from "./stored-schema.js";

/** Keys read ahead for one group at most. */
const GROUP_READS = 256;

/** Values of one member's arguments looked at for ids, at most. */
const ARGUMENT_VALUES = 64;

/**
 * Longest arguments (JSON characters) looked at for ids. Parsing runs on the host's main thread,
 * which every tenant shares: a tenant's large arguments are parsed once, in its own isolate.
 */
const ARGUMENTS_LENGTH = 4096;

/** What a group member brings for its group's reads. */
export interface MemberReads {
  /** Keys it reads before its handler runs. */
  reads?: readonly Buffer[] | undefined;
  /** Its arguments as JSON. */
  argsJson?: string | undefined;
}

/**
 * The keys to read for `members` of a deployment with `tables`: each member's own `reads`, then
 * under every table the row of each id-shaped string of its arguments; {@link GROUP_READS} at most.
 */
export function groupReadKeys(tables: ReadonlyMap<string, CompiledTable>, members: MemberReads[]): Buffer[] {
  const keys = new Map<string, Buffer>();
  const add = (key: Buffer) => {
    if (keys.size < GROUP_READS) keys.set(key.toString("latin1"), key);
  };
  for (const member of members) for (const key of member.reads ?? []) add(key);
  // Stopped at the limit before any further key is made: 64 ids under 20,000 tables made 1.28
  // million keys on the main thread (2 s) for 256 of them.
  for (const member of members)
    for (const id of idsIn(member.argsJson))
      for (const table of tables.values()) {
        if (keys.size >= GROUP_READS) return [...keys.values()];
        add(rowKeyUnder(table.rowPrefix, id));
      }
  return [...keys.values()];
}

/**
 * The id-shaped strings of an argument JSON, from its first {@link ARGUMENT_VALUES} values; none
 * from arguments longer than {@link ARGUMENTS_LENGTH}.
 */
function idsIn(argsJson: string | undefined): string[] {
  if (argsJson === undefined || argsJson.length < 2 || argsJson.length > ARGUMENTS_LENGTH) return [];
  let args: unknown;
  try {
    args = JSON.parse(argsJson);
  } catch {
    return [];
  }
  const ids: string[] = [];
  const pending: unknown[] = [args];
  for (let seen = 0; pending.length > 0 && seen < ARGUMENT_VALUES; seen++) {
    const value = pending.pop();
    if (isRowIdShape(value)) ids.push(value);
    else if (Array.isArray(value)) pending.push(...value.slice(0, ARGUMENT_VALUES));
    else if (value !== null && typeof value === "object") {
      let fields = 0;
      for (const field in value) {
        if (++fields > ARGUMENT_VALUES) break;
        pending.push((value as Record<string, unknown>)[field]);
      }
    }
  }
  return ids;
}

/**
 * Reads `keys` on `snapshot` at once (one message on PostgreSQL). A failure is left to the members:
 * their own reads meet it, as they would have.
 */
export async function readAhead(snapshot: KvSnapshot, keys: Buffer[]): Promise<void> {
  if (keys.length === 0) return;
  await Promise.all(keys.map((key) => snapshot.get(key))).catch(() => {});
}
