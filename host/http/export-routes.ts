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
  type DeploymentService,
  type OwnerCap,
  publicView,
} from "../deployments/index.js";
import type { DeploymentTransfer, ImportProgress, ImportResult, UploadFolder } from "../transfer/index.js";
import { checkStillSpokenFor } from "./body.js";
import type { DeployStarts } from "./deploy-starts.js";
import { sendExport, withObjects } from "./export-answer.js";
import { sentFromThisOrigin } from "./form-origin.js";
import { streamOutcome } from "./ndjson-outcome.js";
import { onlyUnder } from "./routing.js";

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
