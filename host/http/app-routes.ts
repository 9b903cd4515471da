import Router from "@koa/router";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { AuthService } from "../auth/index.js";
import type { Deployments } from "../deployments/index.js";
import { bearerToken } from "./auth-routes.js";
import { readJsonText } from "./body.js";
import { quotaKey, type RequestQuota } from "./request-quota.js";

/**
 * Routes at a deployment's origin: `POST /api/query/<name>` and `POST /api/mutation/<name>`, JSON
 * args in, `200 {"value": ...}` out, as the identity of the `Authorization: Bearer` token (an invalid
 * token is refused, never treated as anonymous), each charged to the caller's request quota.
 * `ctx.state.deployment` was set by tenant resolution.
 */
export function appRoutes(deployments: Deployments, auth: AuthService, quota: RequestQuota): Router {
  const router = new Router();
  for (const kind of ["query", "mutation"] as const) {
    router.post(`/api/${kind}/:name`, async (ctx) => {
      const argsJson = await readJsonText(ctx, LIMITS.requestBodyBytes, "{}");
      const deployment = ctx.state.deployment as string;
      const token = bearerToken(ctx);
      const identity = token ? await auth.authenticate(deployment, token) : null;
      quota.charge(quotaKey(deployment, identity, ctx.ip));
      const result = await deployments.call(deployment, {
        kind,
        name: ctx.params.name as string,
        argsJson,
        identity,
      });
      ctx.type = "application/json";
      ctx.body = `{"value":${result.valueJson}}`;
    });
  }
  return router;
}
