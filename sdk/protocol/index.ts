/** Wire types, limits and error codes shared by the SDK, the isolate runtime and the host. */
export { type ErrorCode, isPlatformError, PlatformError } from "../values/index.js";
export {
  type BridgeHttpRequest,
  type BridgeIdentity,
  DISPATCH_ERROR_CHARS,
  DISPATCH_ERROR_MESSAGE_CHARS,
  type DispatchError,
  type DispatchRequest,
  type DispatchResponse,
  decodeDispatchResponse,
  encodeDispatchResponse,
  handlerRequestFields,
  type LegacyOutcome,
  type LegacyWrite,
  SYSCALL,
  type SyscallArgs,
  type SyscallOp,
  type SyscallResponse,
} from "./bridge.js";
export { anyWrapped, type CrossingText, unwrapText, wrapText } from "./crossing-text.js";
export type {
  DeploymentTotals,
  FieldInfo,
  IndexInfo,
  RowCount,
  RowsAnswer,
  RowsQuery,
  TableInfo,
  TablesAnswer,
} from "./dashboard.js";
export type {
  FunctionsAnswer,
  HandlerFigures,
  MinuteFigures,
  RunAnswer,
  RunIdentity,
  RunRequest,
  StatsAnswer,
  UsageLimits,
} from "./dashboard-functions.js";
export type { CapsuleDeclaration, DatabaseApiVersion, EndpointDeclaration } from "./declaration.js";
export {
  ENDPOINT_HEAD_CHARS,
  type EndpointAnswer,
  encodeEndpointAnswer,
  splitEndpointAnswer,
} from "./endpoint-answer.js";
export {
  type EndpointHead,
  endpointHead,
  isReservedHeader,
  PLATFORM_SESSION_COOKIE,
} from "./endpoint-head.js";
export { type BudgetName, LIMITS } from "./limits.js";
export type { PaginationOptions, PaginationResult, QuerySpec, QueryTerminal, RangeOp } from "./query.js";
export { SYNC_CLOSE } from "./sync-close.js";
export { SYNC_PROTOCOL, SYNC_TOKEN_PROTOCOL_PREFIX, syncProtocolsFor } from "./sync-subprotocols.js";
export {
  decodeSyscallAnswer,
  encodePageAnswer,
  encodeRowAnswer,
  encodeRowsAnswer,
  type SyscallAnswer,
} from "./syscall-answer.js";
export { printable, printableJson, printableJsonText, UNPRINTABLE } from "./unprintable.js";
export {
  BUDGET_WARNING_SHARE,
  BUDGETS,
  type BudgetKey,
  budgetShares,
  CALL_USAGE_FIGURES,
  type CallUsage,
} from "./usage.js";
