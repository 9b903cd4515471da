/**
 * `platform/server`: what capsule authors import to declare a schema, handlers, endpoints and auth.
 */

import "./isolate-globals.js";

export { PlatformError } from "../values/index.js";
export {
  type AuthSettings,
  type Capsule,
  type CapsuleDefinition,
  capsule,
  type MutationHandler,
  mutation,
  type QueryHandler,
  query,
} from "./capsule.js";
export type { Auth, Identity, Logger, MutationCtx, QueryCtx } from "./context.js";
export type {
  DatabaseReader,
  DatabaseWriter,
  Doc,
  IndexRangeBuilder,
  IndexRangeEnd,
  InsertRow,
  PaginationOptions,
  PaginationResult,
  Patch,
  Query,
  SchemaDefinition,
  TableReader,
  TableWriter,
} from "./data-model.js";
export {
  type EndpointDefinition,
  type EndpointRequest,
  type EndpointResponse,
  endpoint,
  json,
  type ResponseOptions,
  text,
} from "./endpoint.js";
export { boolean, Field, type Id, id, number, string, type UserId, userId } from "./fields.js";
export { TableDefinition, table } from "./table.js";
