import { randomBytes } from "node:crypto";
import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { dashboardDeleteAllowed, OWNER_DELETE, ownsDeployment } from "../access/index.js";
import type { DeveloperRecord, Developers } from "../auth/index.js";
import type { HostDatabase, RecordStore } from "../db/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { checkObjectId, type ObjectService } from "../storage/index.js";
import { readBody, SMALL_BODY_BYTES } from "./body.js";
import { sentFromThisOrigin } from "./form-origin.js";
import { escapeHtml, page } from "./html-page.js";
import { sameSitePath } from "./redirect-target.js";

interface DashboardSession {
  developer: string;
  csrf: string;
  expiresAt: number;
}

/** The dashboard's session cookie: no capsule endpoint may set a cookie of this name. */
export const SESSION_COOKIE = "platform_session";
const SESSION_MS = 12 * 60 * 60 * 1000;

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function formatAge(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ago` : `${Math.floor(hours / 24)} days ago`;
}

/**
 * The developer dashboard on the control plane: sign-in with a developer token (session cookie:
 * random id, HttpOnly, SameSite=Strict), and `/deploys/<id>/storage` listing the newest files
 * with per-file delete (CSRF-token forms). Server-rendered HTML, no framework.
 */
export function dashboardRoutes(
  db: HostDatabase,
  developers: Developers,
  deployments: DeploymentService,
  objects: ObjectService,
): RouterMiddleware {
  const sessions: RecordStore<DashboardSession> = db.records<DashboardSession>("dashboard-sessions");
  const router = new Router();

  async function session(
    ctx: Context,
  ): Promise<{ id: string; session: DashboardSession; developer: DeveloperRecord } | undefined> {
    const id = ctx.cookies.get(SESSION_COOKIE);
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
    const found = await sessions.get(id);
    if (!found || found.expiresAt < Date.now()) return undefined;
    const developer = await developers.get(found.developer);
    return developer ? { id, session: found, developer } : undefined;
  }

  /** The posted form, or undefined (after a 403 page) when another site's page sent it. */
  async function form(ctx: Context): Promise<URLSearchParams | undefined> {
    if (!sentFromThisOrigin(ctx)) {
      ctx.status = 403;
      ctx.type = "html";
      ctx.body = page(
        "Forbidden",
        "<h1>Forbidden</h1><p>This form was sent from another site. Open the dashboard here and submit it again.</p>",
      );
      return undefined;
    }
    return new URLSearchParams((await readBody(ctx, SMALL_BODY_BYTES)).toString("utf8"));
  }

  router.get("/dashboard/login", async (ctx) => {
    const next = sameSitePath(typeof ctx.query.next === "string" ? ctx.query.next : undefined);
    const failed = ctx.query.failed === "1" ? `<p class="notice">That token was not accepted.</p>` : "";
    ctx.type = "html";
    ctx.body = page(
      "Sign in",
      `<h1>Sign in</h1>${failed}<form method="post" action="/dashboard/login"><input type="hidden" name="next" value="${escapeHtml(next)}">
<p><label>Developer token<br><input name="token" type="password" autocomplete="off" required></label></p><p><button type="submit">Sign in</button></p></form>`,
    );
  });

  router.post("/dashboard/login", async (ctx) => {
    const fields = await form(ctx);
    if (!fields) return;
    const next = sameSitePath(fields.get("next"));
    const developer = await developers.authenticate(fields.get("token") ?? "");
    if (!developer) {
      ctx.redirect(`/dashboard/login?failed=1&next=${encodeURIComponent(next)}`);
      return;
    }
    const id = randomBytes(32).toString("base64url");
    await sessions.put(id, {
      developer: developer.id,
      csrf: randomBytes(24).toString("base64url"),
      expiresAt: Date.now() + SESSION_MS,
    });
    ctx.cookies.set(SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: "strict",
      maxAge: SESSION_MS,
      overwrite: true,
    });
    ctx.redirect(next);
  });

  router.get("/deploys/:id/storage", async (ctx) => {
    const signedIn = await session(ctx);
    if (!signedIn) {
      ctx.redirect(`/dashboard/login?next=${encodeURIComponent(ctx.path)}`);
      return;
    }
    const record = await deployments.get(ctx.params.id as string);
    ctx.type = "html";
    if (!ownsDeployment(signedIn.developer.id, record)) {
      ctx.status = 404;
      ctx.body = page(
        "Not found",
        `<h1>Not found</h1><p>You own no deployment named <code>${escapeHtml(ctx.params.id as string)}</code>.</p>`,
      );
      return;
    }
    const listing = await objects.list(record.id);
    const now = Date.now();
    const rows = listing.objects
      .map(
        (
          o,
        ) => `<tr><td><code>${escapeHtml(o.key)}</code></td><td>${o.visibility}</td><td class="num">${formatSize(o.size)}</td><td>${escapeHtml(o.contentType)}</td>
<td>${escapeHtml(o.uploaderEmail ?? o.uploaderId)}</td><td>${formatAge(now - o.uploadedAt)}</td>
<td><form method="post" action="/deploys/${escapeHtml(record.id)}/storage/delete"><input type="hidden" name="csrf" value="${signedIn.session.csrf}">
<input type="hidden" name="key" value="${escapeHtml(o.key)}"><button class="danger" type="submit" aria-label="Delete ${escapeHtml(o.key)}">Delete</button></form></td></tr>`,
      )
      .join("\n");
    const window = listing.truncated
      ? `<p class="muted">Showing the newest ${listing.objects.length} of ${listing.totals.count} files.</p>`
      : "";
    ctx.body = page(
      `Storage of ${record.id}`,
      `<h1>Storage of <code>${escapeHtml(record.id)}</code></h1>
<p class="muted">${listing.totals.count} ${listing.totals.count === 1 ? "file" : "files"}, ${formatSize(listing.totals.bytes)}. Signed in as ${escapeHtml(signedIn.developer.name ?? signedIn.developer.id)}.</p>${window}
${rows ? `<table><thead><tr><th>Key</th><th>Visibility</th><th>Size</th><th>Type</th><th>Uploader</th><th>Age</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : `<p class="notice">No files yet.</p>`}`,
    );
  });

  router.post("/deploys/:id/storage/delete", async (ctx) => {
    const fields = await form(ctx);
    if (!fields) return;
    const signedIn = await session(ctx);
    const record = await deployments.get(ctx.params.id as string);
    if (!dashboardDeleteAllowed(signedIn?.developer.id, signedIn?.session.csrf, fields.get("csrf"), record)) {
      ctx.status = 403;
      ctx.type = "html";
      ctx.body = page("Forbidden", "<h1>Forbidden</h1><p>Sign in again and retry.</p>");
      return;
    }
    const [visibility, id] = (fields.get("key") ?? "").split("/");
    if ((visibility === "public" || visibility === "private") && id)
      await objects.remove(record.id, visibility, checkObjectId(id), OWNER_DELETE);
    ctx.redirect(`/deploys/${encodeURIComponent(record.id)}/storage`);
  });
  return router.routes();
}
