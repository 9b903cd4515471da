/** Value types, schema JSON and validation shared by every part of the platform (the leaf module). */
export { callerError, ERROR_STATUS, type ErrorCode, isPlatformError, PlatformError } from "./errors.js";
export { editDistance, nearestName } from "./nearest-name.js";
export { checkSchemaSpec } from "./schema-check.js";
export {
  CREATION_INDEX,
  type FieldKind,
  type FieldSpec,
  type FieldValue,
  type SchemaSpec,
  SYSTEM_FIELDS,
  type TableSpec,
} from "./schema-spec.js";
export {
  checkFieldValue,
  describeType,
  isRowIdShape,
  isValidName,
  numberProblem,
  scalarProblem,
  stringProblem,
} from "./validate.js";
