import type { Middleware } from "koa";
import type { ClientManifestEntry, DeploymentService } from "../deployments/index.js";
import { answerClientFileHead, clientPathsFor, sendClientFile } from "./client-file-response.js";
import { quotaKey, type RequestQuota } from "./request-quota.js";

/** A client file's ETag: its content's hash, cut short. */
const etagOf = (entry: ClientManifestEntry) => `"${entry.hash.slice(0, 32)}"`;

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
      const listed = await deployments.clientFile(id, path, false);
      if (!listed) continue;
      // A `304` and a HEAD are answered from the manifest: reading (and decoding) the bytes for
      // them cost an 8 MiB file's 20 ms of main thread for one request of the quota.
      if (answerClientFileHead(ctx, { path, etag: etagOf(listed.entry) }, true)) return;
      if (ctx.method === "HEAD") {
        ctx.length = listed.entry.size;
        return;
      }
      const found = await deployments.clientFile(id, path, true);
      if (!found?.bytes) {
        // Gone between the two reads (redeployed meanwhile): as if it had not been there.
        for (const header of ["Content-Type", "X-Content-Type-Options", "Cache-Control", "ETag"])
          ctx.remove(header);
        ctx.status = 404;
        continue;
      }
      sendClientFile(ctx, { path, body: found.bytes, etag: etagOf(found.entry) }, true);
      if (ctx.status === 200) quota.chargeAnswer(key, found.bytes.length);
      return;
    }
    return next();
  };
}
