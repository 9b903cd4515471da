import { timingSafeEqual } from "node:crypto";
import Router from "@koa/router";
import type { Context, Next } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { AuthService } from "../auth/index.js";
import { checkDeploymentId, type Deployments, publicView } from "../deployments/index.js";
import { readJsonText } from "./body.js";

function bearer(ctx: Context): string | undefined {
  const header = ctx.get("authorization");
  return header.startsWith("Bearer ") ? header.slice(7).trim() : undefined;
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Requires the operator's bearer token (`PLATFORM_ADMIN_TOKEN`). */
export function requireAdmin(adminToken: string) {
  return async (ctx: Context, next: Next) => {
    const token = bearer(ctx);
    if (!token)
      throw new PlatformError(
        "unauthorized",
        "The operator API needs Authorization: Bearer <PLATFORM_ADMIN_TOKEN>.",
      );
    if (!sameSecret(token, adminToken))
      throw new PlatformError("forbidden", "That operator token is not valid for this host.");
    await next();
  };
}

async function deployBody(
  ctx: Context,
): Promise<{ code: string; env?: Record<string, string>; id?: string }> {
  const body = JSON.parse(await readJsonText(ctx, LIMITS.bundleBytes + 1024 * 1024, "{}")) as Record<
    string,
    unknown
  >;
  if (typeof body.code !== "string")
    throw new PlatformError("bad_request", "A deploy needs { code: <bundle>, env?: {...} }.");
  return body as { code: string; env?: Record<string, string>; id?: string };
}

/**
 * The operator API at `http://<domain>:<port>/v1`: create a deployment from a bundle, redeploy,
 * list, show, delete, and mint an account token for an email (for integrations). Env values are
 * accepted but never returned.
 */
export function controlPlaneRoutes(deployments: Deployments, auth: AuthService, adminToken: string): Router {
  const router = new Router({ prefix: "/v1" });
  router.use(requireAdmin(adminToken));
  router.get("/deploys", async (ctx) => {
    ctx.body = { deploys: (await deployments.list()).map(publicView) };
  });
  router.post("/deploys", async (ctx) => {
    const body = await deployBody(ctx);
    const id = checkDeploymentId(body.id);
    if (await deployments.get(id))
      throw new PlatformError(
        "conflict",
        `Deployment ${id} already exists; redeploy it with PUT /v1/deploys/${id}.`,
      );
    ctx.status = 201;
    ctx.body = publicView(await deployments.deploy(id, body));
  });
  router.put("/deploys/:id", async (ctx) => {
    const id = checkDeploymentId(ctx.params.id);
    const existed = Boolean(await deployments.get(id));
    const record = await deployments.deploy(id, await deployBody(ctx));
    ctx.status = existed ? 200 : 201;
    ctx.body = publicView(record);
  });
  router.get("/deploys/:id", async (ctx) => {
    ctx.body = publicView(await deployments.require(checkDeploymentId(ctx.params.id)));
  });
  router.post("/deploys/:id/sessions", async (ctx) => {
    const id = checkDeploymentId(ctx.params.id);
    await deployments.require(id);
    const body = JSON.parse(await readJsonText(ctx, 16 * 1024, "{}")) as { email?: unknown };
    ctx.status = 201;
    ctx.body = await auth.signInAccount(id, body.email as string);
  });
  router.delete("/deploys/:id", async (ctx) => {
    await deployments.remove(checkDeploymentId(ctx.params.id));
    ctx.status = 204;
  });
  return router;
}
