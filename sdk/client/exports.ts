/** What both entries of `platform/client` export besides `createClient`. */
export type { PaginationOptions, PaginationResult } from "../protocol/index.js";
export { type ErrorCode, isPlatformError, PlatformError } from "../values/index.js";
export type * from "./api-types.js";
export type { AuthState, ClientAuth, ClientIdentity } from "./auth-types.js";
export type { ClientOptions, PlatformClient } from "./client.js";
export type { PaginatedQuery, PaginatedQueryState, PaginationStatus } from "./paginated-query.js";
export type { ReactHooks, RenderedElement, SignInButtonProps } from "./react-types.js";
export type { StorageClient, UploadedObject } from "./storage-client.js";
export type { ConnectionState } from "./sync-connection.js";
export type { FetchFunction, KeyValueStore, SocketFactory, SocketLike, Transport } from "./transport.js";
