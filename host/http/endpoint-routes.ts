import type { Context, Next } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { AuthService } from "../auth/index.js";
import type { Deployments } from "../deployments/index.js";
import { readBody } from "./body.js";
import { quotaKey, type RequestQuota } from "./request-quota.js";

/** Response headers a capsule may not set: the platform owns framing and security headers. */
const RESERVED_HEADERS = new Set([
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "host",
]);

interface EndpointResponseJson {
  kind?: unknown;
  status?: unknown;
  headers?: unknown;
  body?: unknown;
}

/**
 * Serves a deployment's custom endpoints at their declared method and path. Identity comes from
 * `X-Platform-Token`; each call is charged to the caller's request quota. The response is what the
 * handler built with `json()` or `text()`.
 */
export function endpointRoutes(deployments: Deployments, auth: AuthService, quota: RequestQuota) {
  return async (ctx: Context, next: Next) => {
    const id = ctx.state.deployment as string;
    const record = await deployments.require(id);
    const endpoint = record.declaration.endpoints.find((e) => e.path === ctx.path && e.method === ctx.method);
    if (!endpoint) {
      await next();
      return;
    }
    const token = ctx.get("x-platform-token");
    const identity = token ? await auth.authenticate(id, token) : null;
    quota.charge(quotaKey(id, identity, ctx.ip));
    const body = await readBody(ctx, LIMITS.requestBodyBytes);
    const headers = Object.entries(ctx.headers).flatMap(([name, value]) =>
      name === "x-platform-token" || value === undefined
        ? []
        : (Array.isArray(value) ? value : [value]).map((v) => [name, v] as [string, string]),
    );
    const query = [...new URLSearchParams(ctx.querystring).entries()];
    const result = await deployments.callEndpoint(
      id,
      endpoint.name,
      {
        method: ctx.method,
        path: ctx.path,
        headers,
        query,
        bodyBase64: body.toString("base64"),
        bodyText: body.toString("utf8"),
      },
      identity,
    );
    const response = JSON.parse(result.valueJson) as EndpointResponseJson;
    const status = response.status;
    if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599) {
      throw new PlatformError(
        "handler_error",
        `Endpoint ${endpoint.name} returned an invalid status ${JSON.stringify(status)}.`,
      );
    }
    ctx.status = status;
    for (const [name, value] of Object.entries((response.headers ?? {}) as Record<string, unknown>)) {
      if (typeof value === "string" && !RESERVED_HEADERS.has(name.toLowerCase()) && !/[\r\n]/.test(value))
        ctx.set(name, value);
    }
    ctx.body = typeof response.body === "string" ? response.body : "";
  };
}
