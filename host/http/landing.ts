import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import type { CapsuleDeclaration } from "../../sdk/protocol/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { escapeHtml, page } from "./html-page.js";

/** The landing pages run no script, load nothing and may not be framed. */
const LANDING_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'";

function answerPage(ctx: Context, title: string, body: string): void {
  ctx.set("Content-Security-Policy", LANDING_CSP);
  ctx.set("X-Frame-Options", "DENY");
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Cache-Control", "no-store");
  ctx.type = "text/html; charset=utf-8";
  ctx.body = page(title, body);
}

const DOCS_NOTE = `<p class="muted">Documentation: the <code>docs/</code> folder of the platform package
(<code>capsules.md</code>, <code>client.md</code>, <code>cli.md</code>, <code>http-api.md</code>, <code>operators.md</code>).</p>`;

/**
 * `GET /` on the control plane: what this host is and where to go (the dashboard, the operator
 * API), instead of a JSON 404 for someone who opened the host's address in a browser.
 */
export function controlPlaneLanding(): RouterMiddleware {
  const router = new Router();
  router.get("/", (ctx) =>
    answerPage(
      ctx,
      "platform host",
      `<h1>platform host</h1>
<ul>
<li><a href="/dashboard">Dashboard</a>: deployments and their stored files (sign in with a developer token, or the operator token to see every deployment).</li>
<li>Operator and developer API: <code>/v1/...</code> with <code>Authorization: Bearer &lt;token&gt;</code>, for example <code>GET /v1/deploys</code>.</li>
<li>Each deployment is served at its own origin, <code>&lt;id&gt;.${escapeHtml(ctx.hostname || "localhost")}</code>.</li>
</ul>
${DOCS_NOTE}`,
    ),
  );
  return router.routes();
}

function callList(declaration: CapsuleDeclaration): string {
  const calls = [
    ...declaration.queries.map((name) => `<li><code>POST /api/query/${escapeHtml(name)}</code></li>`),
    ...declaration.mutations.map((name) => `<li><code>POST /api/mutation/${escapeHtml(name)}</code></li>`),
    ...declaration.endpoints.map(
      (endpoint) =>
        `<li><code>${escapeHtml(endpoint.method)} ${escapeHtml(endpoint.path)}</code> (endpoint)</li>`,
    ),
  ];
  return calls.length > 0
    ? `<ul>${calls.join("\n")}</ul>`
    : `<p class="muted">The capsule declares no calls yet.</p>`;
}

/**
 * `GET /` at `platform dev`'s origin when the capsule has no web client (no `index.html`): the
 * deployment's calls and where its logs stream, so the developer sees the app is up and how to
 * reach it. Runs after the static files, which answer `/` when there is a client.
 */
export function devLanding(deployments: DeploymentService, deploymentId: string): RouterMiddleware {
  const router = new Router();
  router.get("/", async (ctx) => {
    const record = await deployments.get(deploymentId);
    const title = `${deploymentId} (platform dev)`;
    answerPage(
      ctx,
      title,
      `<h1>${escapeHtml(title)}</h1>
<p>The capsule is running. Call it with its JSON arguments as the body:</p>
${record ? callList(record.declaration) : `<p class="muted">Nothing is deployed yet.</p>`}
<p>Live queries: a WebSocket to <code>/api/sync</code>; or use <code>platform/client</code>.
Logs: <a href="/__platform/logs">/__platform/logs</a> (or the terminal running <code>platform dev</code>).
Put a web app in <code>client/</code> and it is served here instead of this page.</p>
${DOCS_NOTE}`,
    );
  });
  return router.routes();
}
