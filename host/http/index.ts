/** `host/http`: the Koa app. Only composes: tenant resolution, errors, body limits and routes. */

export { DEFAULT_REQUEST_QUOTA, type QuotaSettings, quotaKey, RequestQuota } from "./request-quota.js";
export { createHttpApp, type HttpOptions, listen, type RunningServer } from "./server.js";
export { attachSync, SYNC_LIMITS } from "./sync.js";
export { destinationOfHost } from "./tenant.js";
