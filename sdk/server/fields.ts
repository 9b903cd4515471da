import {
  type FieldKind,
  type FieldSpec,
  type FieldValue,
  PlatformError,
  scalarProblem,
} from "../values/index.js";

/** A row id of table `TableName`: a string the type system will not confuse with other tables' ids. */
export type Id<TableName extends string> = string & { readonly __tableName: TableName };

/** A platform user reference (`userId()` fields); transferred automatically on guest upgrade. */
export type UserId = string & { readonly __userId: true };

/**
 * A field type in a table definition. `T` is the row type, `IsOptional` and `HasDefault` track the
 * modifiers so insert and read types can be derived from the schema alone.
 */
export class Field<
  T extends FieldValue,
  IsOptional extends boolean = false,
  HasDefault extends boolean = false,
> {
  /** The JSON form stored by the host. */
  readonly spec: FieldSpec;
  declare readonly __row: T;
  declare readonly __optional: IsOptional;
  declare readonly __default: HasDefault;

  constructor(spec: FieldSpec) {
    this.spec = spec;
  }

  /** Allows the field to be absent. With `.default()`, it always has a value when read. */
  optional(): Field<T, true, HasDefault> {
    return new Field({ ...this.spec, optional: true });
  }

  /** Fills `value` when an insert omits the field (or an update clears it with `null`). */
  default(value: T): Field<T, IsOptional, true> {
    const problem =
      this.spec.kind === "id" ? "id() fields cannot have a default" : scalarProblem(this.spec.kind, value);
    if (problem) throw new PlatformError("bad_request", `Invalid default: ${problem}.`);
    return new Field({ ...this.spec, default: value });
  }
}

function field<T extends FieldValue>(kind: FieldKind, table?: string): Field<T> {
  return new Field<T>(table === undefined ? { kind, optional: false } : { kind, table, optional: false });
}

/** A string field. No NUL characters, no unpaired surrogates. */
export function string(): Field<string> {
  return field("string");
}

/** A boolean field. */
export function boolean(): Field<boolean> {
  return field("boolean");
}

/** A finite float64 field (integers and decimals are one type). */
export function number(): Field<number> {
  return field("number");
}

/** A reference to a row of `table`. Writes check that the row exists. */
export function id<TableName extends string>(table: TableName): Field<Id<TableName>> {
  return field<Id<TableName>>("id", table);
}

/** A platform user reference; moves from a guest to its account when the guest signs in. */
export function userId(): Field<UserId> {
  return field<UserId>("userId");
}

/** Any field, whatever its modifiers. */
// biome-ignore lint/suspicious/noExplicitAny: the modifiers are irrelevant where any field is accepted.
export type AnyField = Field<any, boolean, boolean>;
