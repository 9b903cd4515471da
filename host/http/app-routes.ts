import { METHODS } from "node:http";
import type { Middleware } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { AuthService } from "../auth/index.js";
import { type DeploymentService, parseIdempotencyKey } from "../deployments/index.js";
import { checkedJsonBody, rawBody } from "./body.js";
import { clientAddressKey } from "./client-address.js";
import { bearerToken } from "./credentials.js";
import { identify } from "./identity.js";
import { methodNotAllowed } from "./method-not-allowed.js";
import { chargeRequest, quotaKey, type RequestQuota } from "./request-quota.js";
import { series, settled } from "./routing.js";

type CallKind = "query" | "mutation";

/**
 * A call route's path: its kind (any case) and one segment naming the handler, with or without a
 * trailing slash. The paths the routes matched when a general router served them.
 */
const CALL_PATH = /^\/api\/(query|mutation)\/([^/]+)\/?$/i;

/**
 * The methods answered `405` on a call route. Node's parser also passes RTSP's methods (`DESCRIBE`,
 * `PLAY`, ...) on an `RTSP/1.0` request line: those were never HTTP routes' to refuse, and end in 404.
 */
const HTTP_METHODS: ReadonlySet<string> = new Set(METHODS);

/** A path segment decoded, or as it is when its escapes do not decode (as the router did). */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A plain HTTP request to the live-query socket's path (sync.ts answers its WebSocket upgrades). */
function notASocket(): PlatformError {
  return new PlatformError(
    "bad_request",
    "/api/sync is the WebSocket of live queries: open it with a WebSocket (platform/client does), not a plain HTTP request.",
  );
}

/**
 * Routes at a deployment's origin: `POST /api/query/<name>` and `POST /api/mutation/<name>`, JSON
 * args in, `200 {"value": ...}` out, as the identity of the `Authorization: Bearer` token (an invalid
 * token is refused, never treated as anonymous), each charged to the caller's request quota. The
 * body is read (and refused when too large) before the token is checked, as it always was. Any
 * other method on these paths is `405 method_not_allowed`, naming POST; any other path under
 * `/api/` is `404 not_found`. A mutation may carry an `Idempotency-Key` header: a retry with the
 * same key gets the first outcome without running again.
 *
 * Every call of every app comes through here, so the two routes are matched by one expression and
 * run a chain assembled once, not by a general router, which spent about 5 µs of a call's 65-70 µs
 * of host CPU on matching, context fields and a chain built per request (bench/HISTORY.md, run
 * at 0f5f2da).
 */
export function appRoutes(
  deployments: DeploymentService,
  auth: AuthService,
  quota: RequestQuota,
): Middleware {
  // Read first (a client still sending when refused would see its connection reset, not the
  // answer), checked once its caller is known and charged: large arguments off the main thread,
  // in their caller's turn (its quota key).
  const body = rawBody(LIMITS.requestBodyBytes);
  const args = checkedJsonBody("{}", (ctx) =>
    quotaKey(ctx.state.deployment as string, ctx.state.identity, quota.clientAddress(ctx.req)),
  );
  const caller = identify(auth, bearerToken, quota);
  const charge = chargeRequest(quota);
  const call =
    (kind: CallKind): Middleware =>
    async (ctx) => {
      const result = await deployments.call(ctx.state.deployment as string, {
        kind,
        name: ctx.params.name as string,
        argsJson: ctx.state.jsonText as string,
        identity: ctx.state.identity,
        session: ctx.state.session,
        idempotencyKey:
          kind === "mutation" ? parseIdempotencyKey(ctx.get("idempotency-key") || undefined) : undefined,
        anonymousCaller: clientAddressKey(quota.clientAddress(ctx.req)),
      });
      ctx.type = "application/json";
      ctx.body = `{"value":${result.valueJson}}`;
    };
  const route = (kind: CallKind) => ({
    post: series([body, caller, charge, args, call(kind)]),
    other: methodNotAllowed("POST", (params) => `${kind} ${params.name}`),
  });
  const routes: Record<CallKind, ReturnType<typeof route>> = {
    query: route("query"),
    mutation: route("mutation"),
  };
  return (ctx, next) => {
    if (!ctx.path.startsWith("/api/")) return next();
    const match = CALL_PATH.exec(ctx.path);
    if (!match && ctx.path === "/api/sync") throw notASocket();
    // Any other path under /api/ ends here: the error sink answers 404.
    if (!match) return settled();
    const route = routes[(match[1] as string).toLowerCase() as CallKind];
    ctx.params = { name: decodedSegment(match[2] as string) };
    if (ctx.method === "POST") return route.post(ctx, settled);
    return HTTP_METHODS.has(ctx.method) ? route.other(ctx, settled) : settled();
  };
}
