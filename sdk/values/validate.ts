import { PlatformError } from "./errors.js";
import type { FieldKind, FieldSpec, FieldValue } from "./schema-spec.js";

const NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/** True for names usable as table, field and index names: a letter, then letters, digits, `_`. */
export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

/** Row ids: 22 characters of base64url (128 random bits). */
const ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;

/** True when `value` has the shape of a row id; whether it names a row is the database's question. */
export function isRowIdShape(value: unknown): value is string {
  return typeof value === "string" && ID_PATTERN.test(value);
}

/** Describes a JS value for error messages: `string`, `number`, `null`, `array`, ... */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/**
 * Why a string cannot be stored, or undefined when it can. Strings are keys in our index codec,
 * so NUL (the codec's escape byte) and unpaired surrogates (no UTF-8 form) are refused.
 */
export function stringProblem(value: string): string | undefined {
  if (value.includes("\u0000")) return "strings cannot contain NUL characters";
  if (!value.isWellFormed()) return "strings cannot contain unpaired surrogates";
  return undefined;
}

/** Why a number cannot be stored, or undefined when it can. */
export function numberProblem(value: number): string | undefined {
  return Number.isFinite(value) ? undefined : "NaN and Infinity are not allowed";
}

/**
 * Why `value` is not a valid value of a field of kind `kind`, or undefined when it is. Does not
 * check that an id names an existing row; only the database can.
 */
export function scalarProblem(kind: FieldKind, value: unknown, idTable?: string): string | undefined {
  switch (kind) {
    case "boolean":
      return typeof value === "boolean" ? undefined : `expected boolean, got ${describeType(value)}`;
    case "number":
      return typeof value === "number" ? numberProblem(value) : `expected number, got ${describeType(value)}`;
    case "string":
      return typeof value === "string" ? stringProblem(value) : `expected string, got ${describeType(value)}`;
    case "userId":
      if (typeof value !== "string") return `expected a user id string, got ${describeType(value)}`;
      if (value.length === 0) return "user ids cannot be empty";
      return stringProblem(value);
    case "id":
      return isRowIdShape(value) ? undefined : `expected an id of table ${idTable ?? "?"}`;
  }
}

/**
 * Validates one field value for a write and returns it. Throws `bad_request` naming the table and
 * field, so the author sees exactly which write was wrong.
 */
export function checkFieldValue(table: string, field: string, spec: FieldSpec, value: unknown): FieldValue {
  const problem = scalarProblem(spec.kind, value, spec.table);
  if (problem !== undefined) {
    throw new PlatformError("bad_request", `Invalid value for ${table}.${field}: ${problem}.`);
  }
  return value as FieldValue;
}
