import type { IncomingMessage } from "node:http";
import type { RouterMiddleware } from "@koa/router";
import type { Context, Middleware } from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import { isDeploymentId } from "../deployments/index.js";
import { crossSiteInDev, fetchedByAnotherSite, isLoopbackHost } from "./loopback-host.js";
import { checkPathEscapes } from "./path-escapes.js";

/** Where a request is going: the control plane, one deployment, or nowhere we know. */
export type Destination = { kind: "control" } | { kind: "deployment"; id: string } | { kind: "unknown" };

/**
 * The dashboard's own origin in `platform dev` (`http://dashboard.localhost:<port>`): a name of its
 * own, so the app's pages at `localhost` are another origin and cannot read its pages or tokens.
 */
export const DEV_DASHBOARD_HOST = "dashboard.localhost";

/**
 * Resolves a Host header: `<domain>` is the control plane, `<id>.<domain>` is deployment `<id>`
 * (the public contract's addressing). In `platform dev` every request whose Host is a loopback name
 * goes to the one deployment, except `dashboard.localhost`, the dashboard's control plane; other
 * names are unknown (see {@link isLoopbackHost}).
 */
export function destinationOfHost(hostHeader: string, domain: string, devDeployment?: string): Destination {
  if (devDeployment) {
    if (!isLoopbackHost(hostHeader)) return { kind: "unknown" };
    return hostHeader.toLowerCase().replace(/:\d+$/, "") === DEV_DASHBOARD_HOST
      ? { kind: "control" }
      : { kind: "deployment", id: devDeployment };
  }
  const host = hostHeader.toLowerCase().replace(/:\d+$/, "");
  if (host === domain) return { kind: "control" };
  const suffix = `.${domain}`;
  if (host.endsWith(suffix)) {
    // A label no deployment could have is no deployment's: answered without reading the database.
    const id = host.slice(0, -suffix.length);
    if (isDeploymentId(id)) return { kind: "deployment", id };
  }
  return { kind: "unknown" };
}

/**
 * Refuses (`400`) a request whose destination is not one host name: a Host header sent twice
 * (Node keeps the first, a proxy in front may have judged it by the other), or an absolute-form
 * target (`POST http://a.example/...`) naming another host than its Host header, which HTTP says
 * the target's authority overrides. Either could take a request past a proxy's rule for one name
 * to another tenant, or to the control plane.
 */
function checkOneHost(ctx: Context): void {
  const refusal = twoHostsIn(ctx.req);
  if (refusal) throw new PlatformError("bad_request", refusal);
}

/** Why `req` names more than one host (see {@link checkOneHost}; sync upgrades use it too), or undefined. */
export function twoHostsIn(req: IncomingMessage): string | undefined {
  const raw = req.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === "host") hosts++;
  if (hosts > 1) return "The request has more than one Host header; send one.";
  const target = req.url ?? "";
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) return undefined;
  let authority: URL;
  try {
    authority = new URL(target);
  } catch {
    return "The request's target is not a URL or a path.";
  }
  // Compared as URLs of the target's scheme: `a.example:80` is `a.example` over http.
  // (`URL.parse` is missing from Node 20 before 20.18: a failed parse is no match.)
  let named: string | undefined;
  try {
    named = new URL(`${authority.protocol}//${req.headers.host ?? ""}`).host;
  } catch {}
  return named === authority.host
    ? undefined
    : "The request's target names another host than its Host header; send the path alone, with the Host header.";
}

/** {@link destinationOfHost} for a Koa request. */
function resolveDestination(ctx: Context, domain: string, devDeployment?: string): Destination {
  return destinationOfHost(ctx.get("host") || "", domain, devDeployment);
}

/** How {@link resolveTenant} reads Host headers. */
export interface TenantOptions {
  domain: string;
  devDeployment?: string | undefined;
  /** Whether this host serves the control plane (it does when it has an operator token). */
  controlPlane: boolean;
}

/**
 * Tenant resolution as middleware: `ctx.state.origin` becomes `"control"` or `"deployment"` (then
 * `ctx.state.deployment` is its id) before any route runs; a host name we do not serve is
 * `404 not_found` at once (`403 forbidden` in `platform dev`), and so is a path no route could
 * decode (`400`, see {@link checkPathEscapes}). In `platform dev`, a request from a page of
 * another site (its `Origin`, or for dev's own `/__platform/` routes its `Sec-Fetch-Site`) is
 * `403 forbidden` too.
 */
export function resolveTenant(options: TenantOptions): Middleware {
  return (ctx, next) => {
    checkOneHost(ctx);
    if (options.devDeployment) {
      const crossSite = crossSiteInDev(ctx.get("origin") || undefined);
      if (crossSite) throw crossSite;
      // Dev's own routes (logs, export, import): not for another site's `<img>` or link either.
      if (
        ctx.path.startsWith("/__platform/") &&
        !ctx.get("origin") &&
        fetchedByAnotherSite(ctx.get("sec-fetch-site") || undefined, ctx.get("referer") || undefined)
      )
        throw new PlatformError(
          "forbidden",
          "platform dev answers its own routes (/__platform/) only to pages served from this machine and to scripts, and this request comes from a page of another site.",
        );
    }
    const destination = resolveDestination(ctx, options.domain, options.devDeployment);
    if (destination.kind !== "unknown") checkPathEscapes(ctx.path);
    if (destination.kind === "deployment") {
      ctx.state.origin = "deployment";
      ctx.state.deployment = destination.id;
      return next();
    }
    if (destination.kind === "control" && options.controlPlane) {
      ctx.state.origin = "control";
      return next();
    }
    if (options.devDeployment) {
      throw new PlatformError(
        "forbidden",
        `platform dev answers only loopback host names, and this request's Host is ${JSON.stringify(ctx.get("host"))} (another site may be pointing its name at this machine). Open http://localhost:<port> instead.`,
      );
    }
    throw new PlatformError(
      "not_found",
      `Unknown host ${ctx.get("host")}: deployments are served at <id>.${options.domain}.`,
    );
  };
}

/**
 * Runs `routes` for requests to `origin` only, so the control plane's and the deployments' route
 * tables never see each other's requests; the others go on past it.
 */
export function atOrigin(origin: "control" | "deployment", routes: RouterMiddleware): RouterMiddleware {
  return (ctx, next) => (ctx.state.origin === origin ? routes(ctx, next) : next());
}
