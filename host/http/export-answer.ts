import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { DeploymentRecord } from "../deployments/index.js";
import type { DeploymentTransfer, WrittenExport } from "../transfer/index.js";
import { pacedByItself } from "./unsent-answers.js";

/** `?objects=0` leaves stored objects out of an export (or an import); anything else keeps them. */
export function withObjects(ctx: Context): boolean {
  const value = ctx.query.objects;
  return !(value === "0" || value === "false");
}

/**
 * Answers with the export of deployment `id` (a zip file), as `developer`'s one export on this
 * host: the host writes the archive to its disk first (the snapshot is then closed), and the
 * client reads that file; stopped when its client reads less than
 * {@link LIMITS.exportProgressBytes} in {@link LIMITS.exportStalledMs}, when it has taken
 * {@link LIMITS.exportMaxMs} to read, or when its client goes away (also before it was written).
 */
export async function sendExport(
  ctx: Context,
  transfer: DeploymentTransfer,
  id: string,
  developer?: string,
  recheck?: (record: DeploymentRecord) => void,
): Promise<void> {
  if (ctx.method !== "GET") {
    ctx.set("Allow", "GET");
    throw new PlatformError(
      "method_not_allowed",
      "An export is read with GET: its headers come only once the host has written the whole archive.",
    );
  }
  const left = new AbortController();
  const leave = () => left.abort();
  ctx.res.once("close", leave);
  // It may have left already (while the deployment was looked up).
  if (ctx.res.destroyed || ctx.req.destroyed) leave();
  let written: WrittenExport;
  try {
    written = await transfer.export(
      id,
      Object.assign({ objects: withObjects(ctx) }, recheck ? { recheck } : {}),
      developer,
      left.signal,
    );
  } catch (error) {
    // The client left while it was written: no one hears an answer, and it is not the host's fault.
    if (left.signal.aborted) return;
    throw error;
  } finally {
    ctx.res.off("close", leave);
  }
  ctx.type = "application/zip";
  ctx.attachment(`${id}.zip`);
  ctx.set("cache-control", "no-store");
  // An archive is mostly compressed already; and its length is the answer's.
  ctx.compress = false;
  // pipeline, not pipe: an error on a stream nobody listens to would end the host.
  let moved = 0;
  let progressAt = Date.now();
  let progressFrom = 0;
  const body = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      moved += chunk.length;
      if (moved - progressFrom >= LIMITS.exportProgressBytes) {
        progressFrom = moved;
        progressAt = Date.now();
      }
      done(null, chunk);
    },
  });
  const startedAt = Date.now();
  const stalled = setInterval(() => {
    const now = Date.now();
    if (now - progressAt <= LIMITS.exportStalledMs && now - startedAt <= LIMITS.exportMaxMs) return;
    body.destroy();
  }, Math.min(LIMITS.exportStalledMs, LIMITS.exportMaxMs) / 4);
  stalled.unref();
  const stop = () => {
    clearInterval(stalled);
    body.destroy();
    void written.discard().catch(() => {});
  };
  ctx.res.once("close", stop);
  body.once("close", stop);
  pipeline(written.open(), body).catch(stop);
  ctx.body = body;
  ctx.length = written.bytes;
  // Its bytes wait on disk, one export per developer, stopped when read too slowly.
  pacedByItself(ctx);
  // The client left while the export was written: nothing will read it.
  if (ctx.res.destroyed || ctx.req.destroyed || left.signal.aborted) stop();
}
