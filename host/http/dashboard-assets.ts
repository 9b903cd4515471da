import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Context } from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import { escapeHtml } from "./html-page.js";

/** What `npm run build` writes next to the bundle (scripts/build-dashboard.mjs). */
interface BuiltManifest {
  js: string;
  css: string;
  files: string[];
}

/** The dashboard's built browser files, in memory: a few hundred KiB, served many times. */
export interface DashboardBundle {
  js: string;
  css: string;
  files: ReadonlyMap<string, Buffer>;
}

/** Where the build puts the bundle: `dist/dashboard` from a source checkout, `../dashboard` from dist. */
function bundleDir(): string | undefined {
  for (const candidate of ["../../dist/dashboard/", "../../dashboard/"]) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(`${dir}manifest.json`)) return dir;
  }
  return undefined;
}

let loaded: DashboardBundle | undefined;

/**
 * The built bundle, read once per process; `unavailable` when the package was not built (the
 * source of `dashboard/` is bundled by `npm run build`, which `npm install` runs).
 */
export function dashboardBundle(): DashboardBundle {
  if (loaded) return loaded;
  const dir = bundleDir();
  if (!dir)
    throw new PlatformError(
      "unavailable",
      "The dashboard's browser bundle is missing from this installation: run `npm run build` in the platform package.",
    );
  const manifest = JSON.parse(readFileSync(`${dir}manifest.json`, "utf8")) as BuiltManifest;
  const files = new Map<string, Buffer>();
  for (const name of manifest.files) files.set(name, readFileSync(`${dir}assets/${name}`));
  loaded = { js: manifest.js, css: manifest.css, files };
  return loaded;
}

/**
 * The shell's policy: only this origin's script, styles and requests, no framing, no plugins, forms
 * only to this origin.
 */
const SHELL_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; manifest-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Security headers every dashboard page carries. */
export function setPageHeaders(ctx: Context, csp: string = SHELL_CSP): void {
  ctx.set("Content-Security-Policy", csp);
  ctx.set("X-Frame-Options", "DENY");
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Referrer-Policy", "same-origin");
  ctx.set("Cache-Control", "no-store");
}

/** Who the shell is for: shown in its header, and the CSRF token its requests carry. */
export interface ShellSession {
  name: string;
  operator: boolean;
  csrf: string;
}

/**
 * The HTML every dashboard page starts from: the hashed stylesheet and script, and the session's
 * name and CSRF token as data attributes (readable by this origin's script only). Never cached.
 */
export function sendShell(ctx: Context, session: ShellSession): void {
  const bundle = dashboardBundle();
  setPageHeaders(ctx);
  ctx.type = "text/html; charset=utf-8";
  ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Dashboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/assets/${bundle.css}">
<script type="module" src="/dashboard/assets/${bundle.js}"></script>
</head><body><div id="root" data-csrf="${escapeHtml(session.csrf)}" data-name="${escapeHtml(session.name)}" data-operator="${session.operator ? "1" : "0"}"><noscript><p>The dashboard needs JavaScript. The operator API (<code>/v1</code>) offers the same data.</p></noscript></div></body></html>`;
}

/**
 * `GET /dashboard/assets/<name>`: a built file by its hashed name, cached for a year as immutable
 * (a new build has new names); any other name is `404 not_found`.
 */
export function sendAsset(ctx: Context, name: string): void {
  const bundle = dashboardBundle();
  const body = bundle.files.get(name);
  if (!body) throw new PlatformError("not_found", `No dashboard file ${name}.`);
  ctx.set("Cache-Control", "public, max-age=31536000, immutable");
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.type = name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8";
  ctx.body = body;
}
