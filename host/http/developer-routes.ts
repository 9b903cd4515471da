import type Router from "@koa/router";
import { PlatformError } from "../../sdk/values/index.js";
import { checkOperator, ownsDeployment } from "../access/index.js";
import type { Developers } from "../auth/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { readJsonObject, SMALL_BODY_BYTES } from "./body.js";
import { principalOf } from "./principal.js";

/**
 * The operator API's people: the operator creates developers (`POST /v1/developers`, the token
 * shown once) and gives one a new token (`POST /v1/developers/<id>/token`); a developer reads who
 * they are (`GET /v1/me`) and replaces their own token (`POST /v1/me/token`). A replaced token
 * stops working at once, with the dashboard sessions it signed in: a leaked one is not for good.
 */
export function registerDeveloperRoutes(
  router: Router,
  deployments: DeploymentService,
  developers: Developers,
): void {
  router.post("/developers", async (ctx) => {
    checkOperator(principalOf(ctx));
    const { developer, token } = await developers.create(await readJsonObject(ctx, SMALL_BODY_BYTES));
    ctx.status = 201;
    ctx.body = { id: developer.id, name: developer.name ?? null, email: developer.email ?? null, token };
  });
  router.post("/developers/:id/token", async (ctx) => {
    checkOperator(principalOf(ctx));
    const id = ctx.params.id as string;
    const token = await developers.rotateToken(id);
    if (!token) throw new PlatformError("not_found", `No developer named ${id}.`);
    ctx.body = { id, token };
  });
  router.get("/me", async (ctx) => {
    const who = principalOf(ctx);
    if (who.kind === "admin") {
      ctx.body = { kind: "admin" };
      return;
    }
    const owned = (await deployments.list())
      .filter((d) => ownsDeployment(who.developer.id, d))
      .map((d) => d.id);
    ctx.body = {
      kind: "developer",
      id: who.developer.id,
      name: who.developer.name ?? null,
      email: who.developer.email ?? null,
      deploys: owned,
    };
  });
  router.post("/me/token", async (ctx) => {
    const who = principalOf(ctx);
    if (who.kind !== "developer")
      throw new PlatformError(
        "bad_request",
        "The operator's token is PLATFORM_ADMIN_TOKEN: change it where the host starts. A developer's: POST /v1/developers/<id>/token.",
      );
    ctx.body = {
      id: who.developer.id,
      token: await developers.rotateToken(who.developer.id, who.developer.tokenHash),
    };
  });
}
