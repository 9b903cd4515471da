import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { checkSignIn } from "../access/index.js";
import {
  type AuthService,
  accountUserId,
  type EmailCodes,
  normaliseEmail,
  type OidcVerifier,
} from "../auth/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { jsonObjectBody, SMALL_BODY_BYTES } from "./body.js";
import { clientAddressKey, siteKey } from "./client-address.js";
import { bearerToken } from "./credentials.js";
import { chargeRequest, quotaKey, RequestQuota } from "./request-quota.js";
import { ownPaths, under } from "./routing.js";

/**
 * Signs an account in, upgrading the guest whose token came with the request (if any): the guest's
 * `userId()` values move to the account in one transaction with `auth.onGuestUpgrade`. An account
 * the deployment does not admit (see checkSignIn) is refused first: no upgrade, no session.
 */
async function signInAccount(ctx: Context, auth: AuthService, deployments: DeploymentService, email: string) {
  const deployment = ctx.state.deployment as string;
  const normalised = normaliseEmail(email);
  const userId = accountUserId(deployment, normalised);
  checkSignIn(await deployments.require(deployment), { userId, kind: "account", email: normalised });
  const guestToken = bearerToken(ctx);
  let upgradedFrom: string | undefined;
  if (guestToken) {
    const guest = await auth.guestToUpgrade(deployment, guestToken);
    if (guest) {
      // The guest's open sockets finish their writes first and are closed once it is retired.
      const result = await auth.retireGuest(deployment, guest.session, () =>
        deployments.upgradeGuest(
          deployment,
          guest.userId,
          { userId, kind: "account", email: normalised },
          {
            record: guest.retire(userId),
            isRetired: guest.isRetired,
          },
        ),
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

/** Code requests one client address may make per deployment (see LIMITS.emailCodeRequestsPerClient). */
const CODE_REQUESTS_PER_CLIENT = {
  burst: LIMITS.emailCodeRequestsPerClient,
  perSecond: LIMITS.emailCodeRequestsPerClient / LIMITS.emailCodeWindowSeconds,
};

/** Code requests one client address may make to every deployment of the host together. */
const CODE_REQUESTS_PER_CLIENT_HOST_WIDE = {
  burst: LIMITS.emailCodeRequestsPerClientHostWide,
  perSecond: LIMITS.emailCodeRequestsPerClientHostWide / LIMITS.emailCodeWindowSeconds,
};

const GUEST_SIGN_INS_PER_CLIENT = {
  burst: LIMITS.guestSignInsPerClient,
  perSecond: LIMITS.guestSignInsPerClient / LIMITS.guestSignInWindowSeconds,
};

const OIDC_SIGN_INS_PER_CLIENT = {
  burst: LIMITS.oidcSignInsPerClient,
  perSecond: LIMITS.oidcSignInsPerClient / LIMITS.guestSignInWindowSeconds,
};

/**
 * `/__platform/auth/*` at each deployment's origin: guest sign-in, token renewal, sign-out (the
 * session ends for good), email one-time
 * codes (`email/start` answers an attempt handle that `email/verify` needs with the code),
 * OpenID Connect ID-token exchange (`oidc`), and in `platform dev` only, instant account sign-in
 * (`dev-sign-in`). Every account sign-in presenting a guest token upgrades that guest. A restricted
 * deployment gives no guest tokens and signs in approved accounts only (checkSignIn). Every
 * route spends the caller's request quota (keyed by client address); code requests are limited
 * per address and per client address too, and so are new guests per client address (outside dev). Unknown paths under `/__platform/auth/` are `404 not_found`.
 */
export function authRoutes(
  auth: AuthService,
  deployments: DeploymentService,
  dev: boolean,
  signIn: SignInMethods,
  quota: RequestQuota,
): RouterMiddleware {
  const router = new Router({ prefix: "/__platform/auth" });
  const codeRequests = new RequestQuota(CODE_REQUESTS_PER_CLIENT);
  const hostCodeRequests = new RequestQuota(CODE_REQUESTS_PER_CLIENT_HOST_WIDE);
  // In platform dev the only client is the developer's (a test suite may make a guest per test).
  const guestSignIns = new RequestQuota(dev || !quota.enabled ? false : GUEST_SIGN_INS_PER_CLIENT);
  const oidcSignIns = new RequestQuota(dev || !quota.enabled ? false : OIDC_SIGN_INS_PER_CLIENT);
  // Charged before the deployment is looked up, as app calls are: a flood of requests to an id
  // that names nothing costs a database read each, and is limited too.
  router.use(chargeRequest(quota, "auth"));
  router.use(async (ctx, next) => {
    await deployments.require(ctx.state.deployment as string);
    await next();
  });
  const json = jsonObjectBody(SMALL_BODY_BYTES);
  router.post("/guest", json, async (ctx) => {
    const body = ctx.state.json as Record<string, unknown>;
    if (body.name !== undefined && !dev)
      throw new PlatformError("bad_request", "Named guests are available in platform dev only.");
    // Refused before it counts: a restricted deployment hands out no guest tokens at all.
    checkSignIn(await deployments.require(ctx.state.deployment as string), { kind: "guest" });
    const client = quotaKey(ctx.state.deployment as string, null, quota.clientAddress(ctx.req));
    if (!guestSignIns.tryTake(client)) {
      const retryAfterSeconds = Math.ceil(guestSignIns.waitMs(client) / 1000);
      throw new PlatformError(
        "limit_exceeded",
        `Too many guests were created from your address (${LIMITS.guestSignInsPerClient} an hour); keep the guest token you have, or retry in ${retryAfterSeconds} s.`,
        { retryAfterSeconds },
      );
    }
    ctx.body = await auth.signInGuest(ctx.state.deployment as string, body.name as string | undefined);
  });
  router.post("/renew", async (ctx) => {
    const token = bearerToken(ctx);
    if (!token)
      throw new PlatformError("unauthorized", "Send the token to renew as Authorization: Bearer <token>.");
    ctx.body = await auth.renew(ctx.state.deployment as string, token);
  });
  router.post("/sign-out", async (ctx) => {
    const token = bearerToken(ctx);
    if (!token)
      throw new PlatformError("unauthorized", "Send the token to sign out as Authorization: Bearer <token>.");
    const deployment = ctx.state.deployment as string;
    await auth.signOut(deployment, token, (key, rewrite) =>
      deployments.rewriteRecord(deployment, key, rewrite),
    );
    ctx.body = { signedOut: true };
  });
  router.post("/email/start", json, async (ctx) => {
    const body = ctx.state.json as Record<string, unknown>;
    const deployment = ctx.state.deployment as string;
    const address = quota.clientAddress(ctx.req);
    // Mails are counted per site (an IPv6 /48, an IPv4 address): counted per /64, one site's
    // 65,536 networks each had the host-wide and per-mailbox allowances of their own.
    const network = siteKey(clientAddressKey(address));
    const client = quotaKey(deployment, null, address);
    const request = await signIn.emailCodes.start(
      deployment,
      normaliseEmail(body.email),
      () => {
        // Both limits are looked at before either is spent: a refusal costs neither.
        const wait = Math.max(codeRequests.waitMs(client), hostCodeRequests.waitMs(network));
        if (wait > 0) return wait;
        codeRequests.tryTake(client);
        hostCodeRequests.tryTake(network);
        return 0;
      },
      network,
    );
    if ("retryAfterSeconds" in request) {
      throw new PlatformError(
        "limit_exceeded",
        `Too many sign-in codes were requested for ${request.limitedBy}; retry in ${request.retryAfterSeconds} s.`,
        { retryAfterSeconds: request.retryAfterSeconds },
      );
    }
    ctx.body = { sent: request.sent, attempt: request.attempt };
  });
  router.post("/email/verify", json, async (ctx) => {
    const body = ctx.state.json as Record<string, unknown>;
    const email = normaliseEmail(body.email);
    // A guest token that cannot be upgraded is refused before the code is spent on it.
    const guestToken = bearerToken(ctx);
    if (guestToken) await auth.guestToUpgrade(ctx.state.deployment as string, guestToken);
    await signIn.emailCodes.verify(ctx.state.deployment as string, email, body.code, body.attempt);
    await signInAccount(ctx, auth, deployments, email);
  });
  router.post("/oidc", json, async (ctx) => {
    const body = ctx.state.json as Record<string, unknown>;
    const client = quotaKey(ctx.state.deployment as string, null, quota.clientAddress(ctx.req));
    if (!oidcSignIns.tryTake(client)) {
      const retryAfterSeconds = Math.ceil(oidcSignIns.waitMs(client) / 1000);
      throw new PlatformError(
        "limit_exceeded",
        `Too many sign-ins were made from your address (${LIMITS.oidcSignInsPerClient} an hour); retry in ${retryAfterSeconds} s.`,
        { retryAfterSeconds },
      );
    }
    const email = await signIn.oidc.verifiedEmail(ctx.state.deployment as string, body.idToken);
    try {
      await signInAccount(ctx, auth, deployments, email);
    } catch (error) {
      // Not signed in: the app may send the same token again.
      signIn.oidc.unspend(body.idToken);
      throw error;
    }
  });
  if (dev) {
    router.post("/dev-sign-in", json, async (ctx) => {
      const body = ctx.state.json as Record<string, unknown>;
      await signInAccount(ctx, auth, deployments, body.email as string);
    });
  }
  return ownPaths(under("/__platform/auth/"), router.routes());
}
