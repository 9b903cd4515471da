import Router from "@koa/router";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { Deployments } from "../deployments/index.js";
import { readJsonText } from "./body.js";

/**
 * Routes at a deployment's origin: `POST /api/query/<name>` and `POST /api/mutation/<name>`, JSON
 * args in, `200 {"value": ...}` out. `ctx.state.deployment` was set by tenant resolution.
 */
export function appRoutes(deployments: Deployments): Router {
  const router = new Router();
  for (const kind of ["query", "mutation"] as const) {
    router.post(`/api/${kind}/:name`, async (ctx) => {
      const argsJson = await readJsonText(ctx, LIMITS.requestBodyBytes, "{}");
      const result = await deployments.call(ctx.state.deployment as string, {
        kind,
        name: ctx.params.name as string,
        argsJson,
        identity: null,
      });
      ctx.type = "application/json";
      ctx.body = `{"value":${result.valueJson}}`;
    });
  }
  return router;
}
