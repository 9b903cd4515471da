import type { Context } from "koa";

/** Where a request is going: the control plane, one deployment, or nowhere we know. */
export type Destination = { kind: "control" } | { kind: "deployment"; id: string } | { kind: "unknown" };

/**
 * Resolves a request by its Host header: `<domain>` is the control plane, `<id>.<domain>` is
 * deployment `<id>` (DESIGN.md section 7). In `platform dev` every request goes to the one deployment.
 */
export function resolveDestination(ctx: Context, domain: string, devDeployment?: string): Destination {
  if (devDeployment) return { kind: "deployment", id: devDeployment };
  const host = (ctx.get("host") || "").toLowerCase().replace(/:\d+$/, "");
  if (host === domain) return { kind: "control" };
  const suffix = `.${domain}`;
  if (host.endsWith(suffix)) {
    const id = host.slice(0, -suffix.length);
    if (id.length > 0 && !id.includes(".")) return { kind: "deployment", id };
  }
  return { kind: "unknown" };
}
