import type { Middleware } from "koa";
import type { DeploymentService } from "../deployments/index.js";
import { clientPathsFor, sendClientFile } from "./client-file-response.js";
import { quotaKey, type RequestQuota } from "./request-quota.js";

/**
 * Serves a hosted deployment's web client (the files `platform deploy` sent from `client/` and its
 * build) at the deployment's own origin, after the platform's routes and the capsule's endpoints,
 * as `platform dev` does: GET and HEAD only, `/` is `index.html`, paths are looked up exactly in
 * the deployed version's manifest (no disk, so no path leaves it; no listings). Anything else
 * goes on to the `404`.
 */
export function clientRoutes(deployments: DeploymentService, quota: RequestQuota): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== "GET" && ctx.method !== "HEAD") return next();
    const id = ctx.state.deployment as string;
    // Each file costs its address a request, in a scope of its own (a page's files do not eat into
    // its calls), and more by its size, as an endpoint's answer does: one address fetching 8 MiB
    // files in a loop had the host read and send 1 GB a second.
    const key = `${quotaKey(id, null, quota.clientAddress(ctx.req))}\u0000client-files`;
    quota.charge(key);
    for (const path of clientPathsFor(ctx.path)) {
      const found = await deployments.clientFile(id, path);
      if (!found) continue;
      sendClientFile(ctx, { path, body: found.bytes, etag: `"${found.entry.hash.slice(0, 32)}"` }, true);
      if (ctx.status === 200 && ctx.method === "GET") quota.chargeAnswer(key, found.bytes.length);
      return;
    }
    return next();
  };
}
