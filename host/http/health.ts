import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { HostDatabase } from "../db/index.js";
import type { BlobStore } from "../storage/index.js";
import { ownPaths } from "./routing.js";

/** A host record's key nobody writes: reading it proves only that the database answers. */
const PROBE_KEY = "readyz-probe";

/**
 * Resolves true when `check` answered within {@link LIMITS.readinessCheckMs}, false on error or
 * timeout; the check is told to give up then (an S3 request left waiting would hold one of the
 * client's sockets every tenant's files use).
 */
async function answers(check: (signal: AbortSignal) => Promise<unknown>): Promise<boolean> {
  const deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => {
      deadline.abort();
      resolve(false);
    }, LIMITS.readinessCheckMs);
  });
  try {
    return await Promise.race([check(deadline.signal).then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function plain(ctx: Context, status: number, text: string): void {
  ctx.status = status;
  ctx.type = "text/plain; charset=utf-8";
  ctx.set("Cache-Control", "no-store");
  ctx.body = `${text}\n`;
}

/**
 * Probes for load balancers on the control plane, without credentials and without details (an
 * outage is the operator's to read in the log, not the internet's): `GET /healthz` answers while
 * the process serves; `GET /readyz` answers `200` only when the database and the blob store both
 * answer a read in time, else `503`, so a balancer sends no traffic to a host cut off from them,
 * nor to one shutting down (`draining`).
 */
export function healthRoutes(db: HostDatabase, blobs: BlobStore, draining: () => boolean): RouterMiddleware {
  const router = new Router();
  router.get("/healthz", (ctx) => plain(ctx, 200, "ok"));
  router.get("/readyz", async (ctx) => {
    if (draining()) return plain(ctx, 503, "draining");
    const [database, storage] = await Promise.all([
      answers(() => db.records<unknown>("health").get(PROBE_KEY)),
      answers((signal) => blobs.ready(signal)),
    ]);
    if (database && storage) plain(ctx, 200, "ready");
    else plain(ctx, 503, "not ready");
  });
  return ownPaths((path) => path === "/healthz" || path === "/readyz", router.routes());
}
