import { Readable } from "node:stream";
import Router, { type RouterMiddleware } from "@koa/router";
import { PlatformError } from "../../sdk/values/index.js";
import { checkHostBackup, type OperatorCaller } from "../access/index.js";
import type { Developers } from "../auth/index.js";
import { type BackupSource, startBackup } from "../backup/index.js";
import { resolvePrincipal } from "./principal.js";
import type { TokenGuesses } from "./token-guesses.js";

/**
 * `GET /v1/backup` on the control plane: the operator's backup of the whole host, streamed as
 * newline-delimited JSON (host/backup/backup-format.ts) from one snapshot while the host serves.
 * One backup runs at a time (`409 conflict` for a second): each holds a snapshot and the removal
 * of deleted objects' bytes until it ends. A client that goes away ends it.
 */
export function backupRoutes(
  source: BackupSource,
  adminToken: string,
  developers: Developers,
  guesses: TokenGuesses,
): RouterMiddleware {
  const router = new Router();
  /** The backup running (one at a time), by its request. */
  let running: object | undefined;
  router.get("/v1/backup", resolvePrincipal(adminToken, developers, guesses), async (ctx) => {
    checkHostBackup(ctx.state.principal as OperatorCaller);
    if (running)
      throw new PlatformError("conflict", "A backup of this host is running already; wait for it to finish.");
    const mine = {};
    running = mine;
    const free = () => {
      if (running === mine) running = undefined;
    };
    // Listened for from the start: a client gone while the backup waited for the locks and counted
    // had left a backup nobody ended (its snapshot open, every deletion held, every later one 409).
    // Its turn is given up at once: the backup stops before its snapshot, or at its next count.
    const left = new AbortController();
    const leave = () => {
      left.abort();
      free();
    };
    ctx.res.once("close", leave);
    let backup: Awaited<ReturnType<typeof startBackup>>;
    try {
      backup = await startBackup(source, left.signal);
    } catch (error) {
      free();
      ctx.res.off("close", leave);
      // Stopped for a client that left: nobody is there to answer.
      if (left.signal.aborted) return;
      throw error;
    }
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      free();
      void backup.close();
    };
    if (left.signal.aborted || ctx.res.destroyed) return end();
    ctx.res.off("close", leave);
    ctx.res.once("close", end);
    const body = Readable.from(backup.lines, { objectMode: false });
    // A body destroyed before its first read never runs the lines' own `finally`.
    body.once("close", end);
    ctx.status = 200;
    ctx.type = "application/x-ndjson";
    ctx.set("cache-control", "no-store");
    ctx.body = body;
  });
  return router.routes();
}
