/**
 * `host/http`: the HTTP edge. `createHttpApp` composes middleware (error sink, tenant resolution,
 * identity, request quota, body limits) and one router per route file; `attachSync` serves the
 * WebSocket sync protocol; `RequestQuota` is the per-caller budget both share.
 */

export { type BodyArrivalLimits, BodyArrivals } from "./body-arrivals.js";
export { hostConnectionLimit } from "./connection-cap.js";
export { sweepExpiredDashboardSessions } from "./dashboard-sessions.js";
export { drainServer } from "./drain.js";
export { listenForMetrics } from "./metrics-port.js";
export { DEFAULT_REQUEST_QUOTA, type QuotaSettings, quotaKey, RequestQuota } from "./request-quota.js";
export { createHttpApp, type HttpOptions, listen, type RunningServer } from "./server.js";
export { attachSync, SYNC_LIMITS, type SyncEndpoint } from "./sync.js";
export { destinationOfHost } from "./tenant.js";
export { type UnsentAnswerLimits, UnsentAnswers } from "./unsent-answers.js";
