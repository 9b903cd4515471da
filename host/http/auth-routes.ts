import Router from "@koa/router";
import type { Context } from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import {
  type AuthService,
  accountUserId,
  type EmailCodes,
  normaliseEmail,
  type OidcVerifier,
} from "../auth/index.js";
import type { Deployments } from "../deployments/index.js";
import { readJsonText } from "./body.js";

/** The bearer token of a request, if any (`Authorization: Bearer <token>`). */
export function bearerToken(ctx: Context): string | undefined {
  const header = ctx.get("authorization");
  if (!header) return undefined;
  if (!header.startsWith("Bearer ") || header.length < 8)
    throw new PlatformError("unauthorized", "Authorization must be `Bearer <token>`.");
  return header.slice(7).trim();
}

async function jsonBody(ctx: Context): Promise<Record<string, unknown>> {
  const value = JSON.parse(await readJsonText(ctx, 16 * 1024, "{}")) as unknown;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new PlatformError("bad_request", "The body must be a JSON object.");
  return value as Record<string, unknown>;
}

/**
 * Signs an account in, upgrading the guest whose token came with the request (if any): the guest's
 * `userId()` values move to the account in one transaction with `auth.onGuestUpgrade`.
 */
async function signInAccount(ctx: Context, auth: AuthService, deployments: Deployments, email: string) {
  const deployment = ctx.state.deployment as string;
  const normalised = normaliseEmail(email);
  const guestToken = bearerToken(ctx);
  let upgradedFrom: string | undefined;
  if (guestToken) {
    const guest = await auth.guestToUpgrade(deployment, guestToken);
    if (guest) {
      const userId = accountUserId(deployment, normalised);
      const result = await deployments.upgradeGuest(
        deployment,
        guest.userId,
        { userId, kind: "account", email: normalised },
        {
          record: guest.retire(userId),
          isRetired: guest.isRetired,
        },
      );
      if (result.upgraded) upgradedFrom = guest.userId;
    }
  }
  const issued = await auth.signInAccount(deployment, normalised);
  ctx.body = upgradedFrom ? Object.assign({}, issued, { upgradedFrom }) : issued;
}

/** The ways an account proves its email. */
export interface SignInMethods {
  emailCodes: EmailCodes;
  oidc: OidcVerifier;
}

/**
 * `/__platform/auth/*` at each deployment's origin: guest sign-in, token renewal, email one-time
 * codes (`email/start`, `email/verify`), OpenID Connect ID-token exchange (`oidc`), and in
 * `platform dev` only, instant account sign-in (`dev-sign-in`). Every account sign-in presenting a
 * guest token upgrades that guest.
 */
export function authRoutes(
  auth: AuthService,
  deployments: Deployments,
  dev: boolean,
  signIn: SignInMethods,
): Router {
  const router = new Router({ prefix: "/__platform/auth" });
  router.use(async (ctx, next) => {
    await deployments.require(ctx.state.deployment as string);
    await next();
  });
  router.post("/guest", async (ctx) => {
    const body = await jsonBody(ctx);
    if (body.name !== undefined && !dev)
      throw new PlatformError("bad_request", "Named guests are available in platform dev only.");
    ctx.body = await auth.signInGuest(ctx.state.deployment as string, body.name as string | undefined);
  });
  router.post("/renew", async (ctx) => {
    const token = bearerToken(ctx);
    if (!token)
      throw new PlatformError("unauthorized", "Send the token to renew as Authorization: Bearer <token>.");
    ctx.body = await auth.renew(ctx.state.deployment as string, token);
  });
  router.post("/email/start", async (ctx) => {
    const body = await jsonBody(ctx);
    await signIn.emailCodes.start(ctx.state.deployment as string, normaliseEmail(body.email));
    ctx.body = { sent: true };
  });
  router.post("/email/verify", async (ctx) => {
    const body = await jsonBody(ctx);
    const email = normaliseEmail(body.email);
    await signIn.emailCodes.verify(ctx.state.deployment as string, email, body.code);
    await signInAccount(ctx, auth, deployments, email);
  });
  router.post("/oidc", async (ctx) => {
    const body = await jsonBody(ctx);
    await signInAccount(ctx, auth, deployments, await signIn.oidc.verifiedEmail(body.idToken));
  });
  if (dev) {
    router.post("/dev-sign-in", async (ctx) => {
      const body = await jsonBody(ctx);
      await signInAccount(ctx, auth, deployments, body.email as string);
    });
  }
  return router;
}
