import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { dashboardDeleteAllowed, mayAutoSignIn, mayManage, OWNER_DELETE } from "../access/index.js";
import { sameSecret } from "../auth/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { checkObjectId, type ObjectService } from "../storage/index.js";
import { readBody, SMALL_BODY_BYTES } from "./body.js";
import { sendAsset, sendShell, setPageHeaders } from "./dashboard-assets.js";
import { storagePage } from "./dashboard-pages.js";
import type { DashboardSessions, SignedIn } from "./dashboard-sessions.js";
import { sentFromThisOrigin } from "./form-origin.js";
import { escapeHtml, page } from "./html-page.js";
import { isLoopbackAddress, isLoopbackHost } from "./loopback-host.js";
import { TWO_SESSION_COOKIES } from "./principal.js";
import { sameSitePath } from "./redirect-target.js";
import type { TokenGuesses } from "./token-guesses.js";

/** The server-rendered pages (sign-in, storage): their own inline styles, no script at all. */
const STORAGE_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Answers a server-rendered page of `status` with the headers every page carries (no framing, no caching, no script). */
function sendPage(ctx: Context, status: number, title: string, body: string): void {
  setPageHeaders(ctx, STORAGE_PAGE_CSP);
  ctx.status = status;
  ctx.type = "html";
  ctx.body = page(title, body);
}

/**
 * The dashboard on the control plane: sign-in with the operator token or a developer token (a
 * session cookie: random id, HttpOnly, SameSite=Strict) and sign-out, server-rendered; the app
 * itself (`/dashboard` and every page under `/dashboard/deploys/`) is one HTML shell loading the
 * hashed browser bundle (`/dashboard/assets/*`, cached as immutable), which reads and writes
 * through the operator API with the session's CSRF token. `/deploys/<id>/storage` stays a
 * server-rendered page listing the newest files with per-file delete (CSRF-token forms). Forms are
 * accepted only from this origin. In `platform dev` (`dev`), a loopback request without a session
 * is signed in as the operator at once (see `mayAutoSignIn`).
 */
export function dashboardRoutes(
  sessions: DashboardSessions,
  deployments: DeploymentService,
  objects: ObjectService,
  /** Sign-ins store a session each, and a wrong token may be a guess: a few a minute per address. */
  signIns: TokenGuesses,
  dev = false,
): RouterMiddleware {
  const router = new Router();

  /** The request's session; in `platform dev` on loopback, a new operator session when it has none. */
  async function signedInOrAuto(ctx: Context): Promise<SignedIn | undefined> {
    const signedIn = await sessions.current(ctx);
    if (signedIn) return signedIn;
    // A new session's cookie would come after the planted one: the sign-in page says what to do.
    if (sessions.twoCookies(ctx)) return undefined;
    const site = ctx.get("sec-fetch-site");
    const auto = mayAutoSignIn(
      dev,
      isLoopbackHost(ctx.get("host")),
      isLoopbackAddress(ctx.socket.remoteAddress),
      site !== "" && site !== "none" && site !== "same-origin",
    );
    return auto ? sessions.signInOperator(ctx) : undefined;
  }

  /** The posted form, or undefined (after a 403 page) when another site's page sent it. */
  async function form(ctx: Context): Promise<URLSearchParams | undefined> {
    if (!sentFromThisOrigin(ctx)) {
      sendPage(
        ctx,
        403,
        "Forbidden",
        "<h1>Forbidden</h1><p>This form was sent from another site. Open the dashboard here and submit it again.</p>",
      );
      return undefined;
    }
    return new URLSearchParams((await readBody(ctx, SMALL_BODY_BYTES)).toString("utf8"));
  }

  router.get("/dashboard/login", async (ctx) => {
    const next = sameSitePath(typeof ctx.query.next === "string" ? ctx.query.next : undefined);
    if (dev && (await signedInOrAuto(ctx))) {
      ctx.redirect(next);
      return;
    }
    const failed = sessions.twoCookies(ctx)
      ? `<p class="notice">${escapeHtml(TWO_SESSION_COOKIES)}</p>`
      : ctx.query.failed === "1"
        ? `<p class="notice">That token was not accepted.</p>`
        : "";
    setPageHeaders(ctx, STORAGE_PAGE_CSP);
    ctx.type = "html";
    ctx.body = page(
      "Sign in",
      `<h1>Sign in</h1>${failed}<form method="post" action="/dashboard/login"><input type="hidden" name="next" value="${escapeHtml(next)}">
<p><label>Developer or operator token<br><input name="token" type="password" autocomplete="off" required></label></p><p><button type="submit">Sign in</button></p></form>`,
    );
  });

  router.post("/dashboard/login", async (ctx) => {
    const fields = await form(ctx);
    if (!fields) return;
    const client = signIns.keyOf(ctx);
    if (!signIns.take(client)) {
      ctx.set("Retry-After", String(signIns.retryAfterSeconds(client)));
      sendPage(
        ctx,
        429,
        "Too many sign-ins",
        `<h1>Too many sign-ins</h1><p>Your address signed in ${LIMITS.dashboardSignInsPerMinute} times in the last minute; wait a minute and sign in again.</p>`,
      );
      return;
    }
    const next = sameSitePath(fields.get("next"));
    if (sessions.twoCookies(ctx)) {
      ctx.redirect(`/dashboard/login?next=${encodeURIComponent(next)}`);
      return;
    }
    if (!(await sessions.signIn(ctx, fields.get("token") ?? ""))) {
      ctx.redirect(`/dashboard/login?failed=1&next=${encodeURIComponent(next)}`);
      return;
    }
    ctx.redirect(next);
  });

  /** The shell for a signed-in person, else a redirect to sign-in that comes back here. */
  async function shell(ctx: Context): Promise<void> {
    const signedIn = await signedInOrAuto(ctx);
    if (!signedIn) {
      ctx.redirect(
        `/dashboard/login?next=${encodeURIComponent(sameSitePath(ctx.originalUrl, "/dashboard"))}`,
      );
      return;
    }
    sendShell(ctx, { name: signedIn.name, operator: signedIn.who.kind === "admin", csrf: signedIn.csrf });
  }
  router.get("/dashboard", shell);
  router.get("/dashboard/deploys/:id{/*rest}", shell);
  router.get("/dashboard/assets/:name", (ctx) => sendAsset(ctx, ctx.params.name as string));

  router.post("/dashboard/logout", async (ctx) => {
    const fields = await form(ctx);
    if (!fields) return;
    const signedIn = await sessions.current(ctx);
    if (signedIn && !sameSecret(fields.get("csrf") ?? "", signedIn.csrf)) {
      sendPage(ctx, 403, "Forbidden", "<h1>Forbidden</h1><p>Sign out from the dashboard's own page.</p>");
      return;
    }
    await sessions.signOut(ctx);
    ctx.redirect("/dashboard/login");
  });

  router.get("/deploys/:id/storage", async (ctx) => {
    const signedIn = await signedInOrAuto(ctx);
    if (!signedIn) {
      ctx.redirect(`/dashboard/login?next=${encodeURIComponent(sameSitePath(ctx.path, "/dashboard"))}`);
      return;
    }
    const record = await deployments.get(ctx.params.id as string);
    if (!record || !mayManage(signedIn.who, record)) {
      sendPage(
        ctx,
        404,
        "Not found",
        `<h1>Not found</h1><p>You manage no deployment named <code>${escapeHtml(ctx.params.id as string)}</code>.</p>`,
      );
      return;
    }
    setPageHeaders(ctx, STORAGE_PAGE_CSP);
    ctx.type = "html";
    // Sent as it is: compressed, the size of a page holding the session's CSRF token beside text
    // a tenant chose (content types, uploaders' emails) tells an onlooker about the token (BREACH).
    ctx.compress = false;
    ctx.body = storagePage(record, await objects.list(record), signedIn.name, signedIn.csrf);
  });

  router.post("/deploys/:id/storage/delete", async (ctx) => {
    const fields = await form(ctx);
    if (!fields) return;
    const signedIn = await sessions.current(ctx);
    const record = await deployments.get(ctx.params.id as string);
    if (!dashboardDeleteAllowed(signedIn?.who, signedIn?.csrf, fields.get("csrf"), record)) {
      sendPage(ctx, 403, "Forbidden", "<h1>Forbidden</h1><p>Sign in again and retry.</p>");
      return;
    }
    const [visibility, id] = (fields.get("key") ?? "").split("/");
    if ((visibility === "public" || visibility === "private") && id)
      await objects.remove(record, visibility, checkObjectId(id), OWNER_DELETE);
    ctx.redirect(`/deploys/${encodeURIComponent(record.id)}/storage`);
  });
  return router.routes();
}
