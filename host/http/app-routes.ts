import Router, { type RouterMiddleware } from "@koa/router";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { AuthService } from "../auth/index.js";
import { type DeploymentService, parseIdempotencyKey } from "../deployments/index.js";
import { jsonTextBody } from "./body.js";
import { bearerToken } from "./credentials.js";
import { identify } from "./identity.js";
import { methodNotAllowed } from "./method-not-allowed.js";
import { chargeRequest, type RequestQuota } from "./request-quota.js";
import { ownPaths, under } from "./routing.js";

/**
 * Routes at a deployment's origin: `POST /api/query/<name>` and `POST /api/mutation/<name>`, JSON
 * args in, `200 {"value": ...}` out, as the identity of the `Authorization: Bearer` token (an invalid
 * token is refused, never treated as anonymous), each charged to the caller's request quota. The
 * body is read (and refused when too large) before the token is checked, as it always was. Any
 * other method on these paths is `405 method_not_allowed`, naming POST. A mutation may carry an
 * `Idempotency-Key` header: a retry with the same key gets the first outcome without running again.
 */
export function appRoutes(
  deployments: DeploymentService,
  auth: AuthService,
  quota: RequestQuota,
): RouterMiddleware {
  const router = new Router();
  const args = jsonTextBody(LIMITS.requestBodyBytes, "{}");
  const caller = identify(auth, bearerToken);
  const charge = chargeRequest(quota);
  for (const kind of ["query", "mutation"] as const) {
    router.post(`/api/${kind}/:name`, args, caller, charge, async (ctx) => {
      const result = await deployments.call(ctx.state.deployment as string, {
        kind,
        name: ctx.params.name as string,
        argsJson: ctx.state.jsonText as string,
        identity: ctx.state.identity,
        session: ctx.state.session,
        idempotencyKey:
          kind === "mutation" ? parseIdempotencyKey(ctx.get("idempotency-key") || undefined) : undefined,
      });
      ctx.type = "application/json";
      ctx.body = `{"value":${result.valueJson}}`;
    });
    router.all(
      `/api/${kind}/:name`,
      methodNotAllowed("POST", (params) => `${kind} ${params.name}`),
    );
  }
  return ownPaths(under("/api/"), router.routes());
}
