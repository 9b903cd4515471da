/**
 * `platform/client`: what app clients import. This version carries the shared wire types and the
 * error type; the HTTP/WebSocket client, storage client and React hooks build on them.
 */
export type { PaginationOptions, PaginationResult } from "../protocol/index.js";
export { type ErrorCode, isPlatformError, PlatformError } from "../values/index.js";
