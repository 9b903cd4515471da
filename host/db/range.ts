import type { RangeOp } from "../../sdk/protocol/index.js";
import { type FieldValue, PlatformError, scalarProblem } from "../../sdk/values/index.js";
import { afterPrefix, encodeValue, TAG_FALSE } from "./codec.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";

/** A half-open key range `[start, end)` of one index. */
export interface KeyRange {
  start: Buffer;
  end: Buffer;
}

/** A compiled index range: its keys, and the shape it was asked in. */
export interface IndexRange extends KeyRange {
  /** How many leading fields of `rangeFields` it fixes with `eq`. */
  equalities: number;
  /** Whether it also bounds the field after them (`gt`, `gte`, `lt`, `lte`). */
  bounded: boolean;
}

function bad(message: string): PlatformError {
  return new PlatformError("bad_request", message);
}

function checkValue(table: CompiledTable, field: string, op: RangeOp): FieldValue | null {
  const value = op.value;
  if (value === null) {
    if (op.op !== "eq")
      throw bad(
        `${op.op}(${field}, null) is not allowed: use eq(${field}, null) to match rows without a value.`,
      );
    if (field === "createdAt" || !table.spec.fields[field]?.optional) {
      throw bad(
        `eq(${field}, null) can only be used on optional fields; ${table.name}.${field} always has a value.`,
      );
    }
    return null;
  }
  const spec = field === "createdAt" ? { kind: "number" as const } : table.spec.fields[field];
  if (!spec) throw bad(`Unknown field ${table.name}.${field}.`);
  const problem = scalarProblem(spec.kind === "id" ? "string" : spec.kind, value);
  if (problem) throw bad(`Invalid value for ${table.name}.${field} in an index range: ${problem}.`);
  return value;
}

/**
 * Compiles `q.eq(...).gt(...)` into one key range, checking the documented rule: equalities on a prefix
 * of the index fields in order, then at most one lower and one upper bound on the next field.
 * `gt/gte/lt/lte` match present values only, so a range with only an upper bound starts after absent.
 */
export function compileRange(table: CompiledTable, index: CompiledIndex, ops: RangeOp[]): IndexRange {
  if (!Array.isArray(ops)) throw bad("An index range must be a list of comparisons.");
  const fields = index.rangeFields;
  const parts: Buffer[] = [index.prefix];
  let at = 0;
  while (at < ops.length && ops[at]?.op === "eq") {
    const op = ops[at] as RangeOp;
    const expected = fields[at];
    if (expected === undefined)
      throw bad(`Index ${table.name}.${index.name} has only ${fields.length} fields to compare.`);
    if (op.field !== expected) {
      throw bad(
        `Index ${table.name}.${index.name} compares fields in order (${fields.join(", ")}): expected ${expected}, got ${String(op.field)}.`,
      );
    }
    parts.push(encodeValue(checkValue(table, expected, op), index.isId[at] === true));
    at++;
  }
  const prefix = Buffer.concat(parts);
  let lower: RangeOp | undefined;
  let upper: RangeOp | undefined;
  for (const op of ops.slice(at)) {
    const expected = fields[at];
    if (op.op === "eq")
      throw bad(`eq(${String(op.field)}) must come before range comparisons in an index range.`);
    if (!["gt", "gte", "lt", "lte"].includes(op.op))
      throw bad(`Unknown index range comparison ${JSON.stringify(op.op)}.`);
    if (expected === undefined || op.field !== expected) {
      throw bad(
        `Index ${table.name}.${index.name}: a range comparison must be on the field after the equalities (${expected ?? "none left"}), got ${String(op.field)}.`,
      );
    }
    if (op.op === "gt" || op.op === "gte") {
      if (lower) throw bad(`Index range on ${table.name}.${expected} has two lower bounds.`);
      lower = op;
    } else {
      if (upper) throw bad(`Index range on ${table.name}.${expected} has two upper bounds.`);
      upper = op;
    }
  }
  const isId = index.isId[at] === true;
  const bound = (op: RangeOp) =>
    Buffer.concat([prefix, encodeValue(checkValue(table, fields[at] as string, op), isId)]);
  let start: Buffer = prefix;
  if (lower) start = lower.op === "gte" ? bound(lower) : afterPrefix(bound(lower));
  else if (upper) start = Buffer.concat([prefix, Buffer.from([TAG_FALSE])]);
  let end: Buffer = afterPrefix(prefix);
  if (upper) end = upper.op === "lt" ? bound(upper) : afterPrefix(bound(upper));
  if (Buffer.compare(start, end) > 0) end = start;
  return { start, end, equalities: at, bounded: lower !== undefined || upper !== undefined };
}
