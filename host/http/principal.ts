import type { Context, Next } from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import { authoriseSessionRequest } from "../access/index.js";
import { type DeveloperRecord, type Developers, sameSecret } from "../auth/index.js";
import { bearerOf } from "./credentials.js";
import { sentFromThisOrigin } from "./form-origin.js";
import type { TokenGuesses } from "./token-guesses.js";

/** Who is calling the operator API: the host's operator, or a developer. */
export type Principal = { kind: "admin" } | { kind: "developer"; developer: DeveloperRecord };

/** The header a dashboard page sends its session's CSRF token in. */
export const CSRF_HEADER = "x-platform-csrf";

/** What principal resolution needs of the dashboard's sessions (`DashboardSessions` is one). */
export interface SessionLookup {
  current(ctx: Context): Promise<{ who: Principal; csrf: string } | undefined>;
  /** Whether the request carries a session cookie at all (valid or not). */
  presented(ctx: Context): boolean;
  /** Whether it carries two: another host under the domain planted one (see DashboardSessions). */
  twoCookies(ctx: Context): boolean;
}

/**
 * What the dashboard says when the browser sends its session cookie twice: a page of another host
 * under the domain set one (`Domain=<domain>`, "cookie tossing"), and neither can be trusted.
 */
export const TWO_SESSION_COOKIES =
  "Your browser sent two dashboard session cookies: a page of another site under this domain (an app at a subdomain) set one. " +
  "Clear this site's cookies, then sign in again. Operators: docs/operators.md says how to keep apps from doing this.";

/**
 * Resolves the operator-API caller: `Authorization: Bearer` with the operator token
 * (`PLATFORM_ADMIN_TOKEN`) or a developer token; anything else is refused, and counts as one of
 * its address's {@link TokenGuesses}. With `sessions`, a request without the header may instead be
 * spoken for by a dashboard session cookie, when it also carries that session's CSRF token and
 * comes from the control plane's own pages.
 */
export function resolvePrincipal(
  adminToken: string,
  developers: Developers,
  guesses: TokenGuesses,
  sessions?: SessionLookup,
) {
  return async (ctx: Context, next: Next) => {
    const token = bearerOf(ctx.get("authorization"));
    if (token === undefined && sessions?.presented(ctx)) {
      const signedIn = await sessions.current(ctx);
      if (!signedIn)
        throw new PlatformError(
          "unauthorized",
          sessions.twoCookies(ctx) ? TWO_SESSION_COOKIES : "Your dashboard session has ended: sign in again.",
        );
      authoriseSessionRequest(signedIn.csrf, ctx.get(CSRF_HEADER), sentFromThisOrigin(ctx));
      ctx.state.principal = signedIn.who;
      ctx.state.principalLive = async () => (await sessions.current(ctx)) !== undefined;
      ctx.set("Cache-Control", "no-store");
      await next();
      return;
    }
    if (token === null || token === undefined) {
      throw new PlatformError(
        "unauthorized",
        "The operator API needs Authorization: Bearer <operator or developer token>.",
      );
    }
    const address = guesses.keyOf(ctx);
    guesses.checkMayTry(address);
    if (sameSecret(token, adminToken)) ctx.state.principal = { kind: "admin" } satisfies Principal;
    else {
      const developer = await developers.authenticate(token);
      if (!developer) {
        guesses.take(address);
        throw new PlatformError("forbidden", "That token is not valid for this host.");
      }
      ctx.state.principal = { kind: "developer", developer } satisfies Principal;
      ctx.state.principalLive = async () => (await developers.authenticate(token)) !== undefined;
    }
    await next();
  };
}

/**
 * Whether the credential {@link resolvePrincipal} accepted still speaks for its caller (a long
 * response asks again: a developer token replaced or a dashboard session ended since). The
 * operator's token lasts as long as the host's.
 */
export function principalStillLive(ctx: Context): Promise<boolean> {
  const live = ctx.state.principalLive as (() => Promise<boolean>) | undefined;
  return live ? live() : Promise.resolve(true);
}

/** The caller {@link resolvePrincipal} found. */
export function principalOf(ctx: Context): Principal {
  return ctx.state.principal as Principal;
}

/**
 * The caller of `ctx` as a key that bounds its share of a host resource (log streams, the JSON
 * thread): each developer, and the operator.
 */
export function callerKey(ctx: Context): string {
  const who = principalOf(ctx);
  return who.kind === "developer" ? `developer:${who.developer.id}` : "operator";
}
