import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { checkDataTransfer, checkNewDeploymentId, type OperatorCaller } from "../access/index.js";
import {
  checkDeploymentId,
  type DeploymentRecord,
  type DeploymentService,
  type OwnerCap,
  publicView,
} from "../deployments/index.js";
import type {
  DeploymentTransfer,
  ImportProgress,
  ImportResult,
  UploadFolder,
  WrittenExport,
} from "../transfer/index.js";
import { checkStillSpokenFor } from "./body.js";
import type { DeployStarts } from "./deploy-starts.js";
import { sentFromThisOrigin } from "./form-origin.js";
import { streamOutcome } from "./ndjson-outcome.js";
import { onlyUnder } from "./routing.js";
import { pacedByItself } from "./unsent-answers.js";

/** `?objects=0` leaves stored objects out of an export (or an import); anything else keeps them. */
function withObjects(ctx: Context): boolean {
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
async function sendExport(
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

/**
 * Writes the request body (the archive) to a private file of `uploads`, refused past
 * `LIMITS.importArchiveBytes` (`413 too_large`), and runs `work` on it; the file is removed after.
 */
async function withUploadedArchive<T>(
  ctx: Context,
  uploads: UploadFolder,
  work: (path: string) => Promise<T>,
): Promise<T> {
  const limit = LIMITS.importArchiveBytes;
  const tooLarge = () =>
    new PlatformError(
      "too_large",
      `An import archive is limited to ${limit} bytes (${limit / 1024 / 1024} MiB).`,
    );
  if (Number(ctx.get("content-length")) > limit) throw tooLarge();
  const dir = await uploads.create();
  try {
    const path = join(dir, "archive.zip");
    let received = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        received += chunk.length;
        done(received > limit ? tooLarge() : null, chunk);
      },
    });
    await pipeline(ctx.req, counter, createWriteStream(path, { mode: 0o600 }));
    await checkStillSpokenFor(ctx);
    return await work(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function resultView(result: ImportResult) {
  return {
    deployment: publicView(result.deployment),
    ...(result.claimToken ? { claimToken: result.claimToken } : {}),
    tables: result.tables,
    objects: result.objects,
    replaced: result.replaced,
  };
}

/**
 * Runs an import of the uploaded archive into `id`, checking `caller` (the access rule) again on
 * the record found under the deployment's lock; a developer's second import while one of theirs
 * runs on this host is refused before its upload is read (`409 conflict`). With
 * `Accept: application/x-ndjson` the answer is one progress line per step, then `{ import }` or
 * `{ error }`; else the result as JSON.
 */
async function receiveImport(
  ctx: Context,
  transfer: DeploymentTransfer,
  id: string,
  caller: OperatorCaller,
  owners?: OwnerCap,
): Promise<void> {
  // An import that creates a deployment counts against its developer's quota: in the developer's
  // turn, counted under the deployment's lock once the import is known to create it.
  const developer = owners && caller.kind === "developer" ? caller.developer.id : undefined;
  const request = (archive: string) => ({
    id,
    archive,
    replace: ctx.query.replace === "1" || ctx.query.replace === "true",
    objects: withObjects(ctx),
    authorise: async (existing: Parameters<typeof checkDataTransfer>[1]) => {
      const owner = checkDataTransfer(caller, existing);
      if (!existing) checkNewDeploymentId(caller, id);
      // Asked at each step too: a token replaced while the import waited for a lock or its turn.
      await checkStillSpokenFor(ctx);
      if (!existing && developer !== undefined) await owners?.check(developer);
      return owner;
    },
  });
  const run = (archive: string, onProgress?: (progress: ImportProgress) => void) => {
    const work = () => transfer.import(request(archive), onProgress);
    return owners ? owners.inTurn(developer, work) : work();
  };
  // The developer's one import at a time is taken before a byte of the upload is written.
  const importer = caller.kind === "developer" ? caller.developer.id : undefined;
  if (!ctx.get("accept").includes("application/x-ndjson")) {
    const result = await transfer.importTurn(importer, () =>
      withUploadedArchive(ctx, transfer.uploads, (archive) => run(archive)),
    );
    ctx.status = 200;
    ctx.body = resultView(result);
    return;
  }
  // The stream starts once the archive is received; the middleware then returns, so that Koa
  // sends each line as it comes (it sends a body only after the middleware ends), while the
  // import goes on in the developer's turn. A refusal before that is an ordinary error answer.
  let streaming!: () => void;
  const started = new Promise<void>((resolve) => {
    streaming = resolve;
  });
  const imported = transfer.importTurn(importer, () =>
    withUploadedArchive(ctx, transfer.uploads, (archive) => {
      const outcome = streamOutcome(
        ctx,
        200,
        (line) => {
          line({ progress: { step: "received" } });
          return run(archive, (progress) => line({ progress }));
        },
        (result) => ({ import: resultView(result) }),
        true,
      );
      streaming();
      return outcome;
    }),
  );
  // Once streaming, the outcome goes into the stream: nothing of it is left to reject here.
  imported.catch(() => {});
  await Promise.race([started, imported]);
}

/**
 * The operator API's export and import routes (on the `/v1` router, after the caller is resolved):
 * `GET /v1/deploys/<id>/export` and `POST /v1/deploys/<id>/import`, for the deployment's owner
 * or the operator (host/access `checkDataTransfer`). An import into an id that names no deployment
 * creates it, as a deploy does.
 */
export function registerTransferRoutes(
  router: Router,
  transfer: DeploymentTransfer,
  deployments: DeploymentService,
  deployStarts: DeployStarts,
): void {
  const callerOf = (ctx: Context) => ctx.state.principal as OperatorCaller;
  router.get("/deploys/:id/export", async (ctx) => {
    const record = await deployments.require(checkDeploymentId(ctx.params.id));
    const caller = callerOf(ctx);
    checkDataTransfer(caller, record);
    await sendExport(
      ctx,
      transfer,
      record.id,
      caller.kind === "developer" ? caller.developer.id : undefined,
      (now) => checkDataTransfer(caller, now),
    );
  });
  router.post("/deploys/:id/import", async (ctx) => {
    const id = checkDeploymentId(ctx.params.id);
    // Checked before the upload is read, and again under the deployment's lock.
    const caller = callerOf(ctx);
    const existing = await deployments.get(id);
    checkDataTransfer(caller, existing);
    if (!existing) checkNewDeploymentId(caller, id);
    // Counted as a deploy: it compiles the bundle and takes the deployment's lock as one does.
    deployStarts.charge(caller);
    // An import into a new id creates a deployment: refused before the upload when the
    // developer's quota is full (and checked again as it creates it).
    if (!existing && caller.kind === "developer") await deployments.owners.check(caller.developer.id);
    await receiveImport(ctx, transfer, id, caller, deployments.owners);
  });
}

/**
 * `platform dev`'s export and import at the app origin: `GET /__platform/export` and
 * `POST /__platform/import`, on the local deployment only, without a token, as `platform dev`'s
 * other local tools (its logs) are: the dev server answers loopback names only, and an import must
 * come from a program (a web page of another origin cannot send it).
 */
export function devTransferRoutes(transfer: DeploymentTransfer): RouterMiddleware {
  const router = new Router({ sensitive: true, strict: true });
  const local: OperatorCaller = { kind: "admin" };
  router.get("/__platform/export", async (ctx, next) => {
    if (ctx.method !== "GET") return next();
    await sendExport(ctx, transfer, ctx.state.deployment as string);
  });
  router.post("/__platform/import", async (ctx) => {
    // No token guards it, so no other site's page may send one (a form post to localhost).
    if (!sentFromThisOrigin(ctx) || !ctx.is("application/zip"))
      throw new PlatformError(
        "forbidden",
        "Imports into the dev server come from the platform command (Content-Type: application/zip), not from web pages.",
      );
    await receiveImport(ctx, transfer, ctx.state.deployment as string, local);
  });
  return onlyUnder("/__platform/", router.routes());
}
