import type { Context } from "koa";

/** Where a request is going: the control plane, one deployment, or nowhere we know. */
export type Destination = { kind: "control" } | { kind: "deployment"; id: string } | { kind: "unknown" };

/**
 * Resolves a Host header: `<domain>` is the control plane, `<id>.<domain>` is deployment `<id>`
 * (DESIGN.md section 7). In `platform dev` every request goes to the one deployment.
 */
export function destinationOfHost(hostHeader: string, domain: string, devDeployment?: string): Destination {
  if (devDeployment) return { kind: "deployment", id: devDeployment };
  const host = hostHeader.toLowerCase().replace(/:\d+$/, "");
  if (host === domain) return { kind: "control" };
  const suffix = `.${domain}`;
  if (host.endsWith(suffix)) {
    const id = host.slice(0, -suffix.length);
    if (id.length > 0 && !id.includes(".")) return { kind: "deployment", id };
  }
  return { kind: "unknown" };
}

/** {@link destinationOfHost} for a Koa request. */
export function resolveDestination(ctx: Context, domain: string, devDeployment?: string): Destination {
  return destinationOfHost(ctx.get("host") || "", domain, devDeployment);
}
