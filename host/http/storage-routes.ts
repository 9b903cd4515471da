import Busboy from "busboy";
import type { Context, Next } from "koa";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { authoriseStorageListing, checkStorageReader, checkStorageWriter } from "../access/index.js";
import type { AuthService, Developers } from "../auth/index.js";
import type { Deployments } from "../deployments/index.js";
import {
  mustDownloadAsAttachment,
  type ObjectRecord,
  type ObjectService,
  type Visibility,
} from "../storage/index.js";
import { bearerToken } from "./auth-routes.js";
import { readBody } from "./body.js";

/** The sandboxing policy every download carries: nothing runs, nothing loads. */
export const DOWNLOAD_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox";

/** Storage routes also take the token as `?platform_token=` (a plain link or image can carry it). */
function tokenOf(ctx: Context): string | undefined {
  const query = ctx.query.platform_token;
  return bearerToken(ctx) ?? (typeof query === "string" && query ? query : undefined);
}

async function identityOf(
  ctx: Context,
  auth: AuthService,
  deployment: string,
): Promise<BridgeIdentity | null> {
  const token = tokenOf(ctx);
  return token ? auth.authenticate(deployment, token) : null;
}

async function uploadBody(ctx: Context, limit: number): Promise<{ bytes: Buffer; contentType: string }> {
  const declared = ctx.get("content-type") || "application/octet-stream";
  if (!declared.toLowerCase().startsWith("multipart/form-data")) {
    return { bytes: await readBody(ctx, limit), contentType: declared };
  }
  return new Promise((resolve, reject) => {
    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({ headers: ctx.req.headers, limits: { files: 2, fileSize: limit + 1, fields: 20 } });
    } catch {
      reject(new PlatformError("invalid_request", "Malformed multipart body."));
      return;
    }
    const files: Array<{ bytes: Buffer; contentType: string }> = [];
    let tooLarge = false;
    parser.on("file", (_name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("limit", () => {
        tooLarge = true;
      });
      stream.on("close", () =>
        files.push({
          bytes: Buffer.concat(chunks),
          contentType: info.mimeType || "application/octet-stream",
        }),
      );
    });
    parser.on("error", () => reject(new PlatformError("invalid_request", "Malformed multipart body.")));
    parser.on("close", () => {
      if (tooLarge) reject(new PlatformError("too_large", `Files are limited to ${limit} bytes (5 MiB).`));
      else if (files.length !== 1)
        reject(new PlatformError("invalid_request", "A multipart upload carries exactly one file part."));
      else resolve(files[0] as { bytes: Buffer; contentType: string });
    });
    ctx.req.pipe(parser);
  });
}

function visibilityOf(value: string | undefined): Visibility {
  if (value === "public" || value === "private") return value;
  throw new PlatformError("not_found", "No such object.");
}

/** The listing JSON of the inspect route. */
export function listingJson(listing: Awaited<ReturnType<ObjectService["list"]>>, limit: number) {
  return {
    objects: listing.objects.map((o: ObjectRecord) => ({
      key: o.key,
      visibility: o.visibility,
      size: o.size,
      contentType: o.contentType,
      uploaderId: o.uploaderId,
      uploaderEmail: o.uploaderEmail,
      uploadedAt: o.uploadedAt,
    })),
    totals: listing.totals,
    newest: limit,
    truncated: listing.truncated,
  };
}

/**
 * The built-in storage routes at a deployment's origin (SPEC.md): `POST /storage`,
 * `GET`/`DELETE /storage/<public|private>/<id>`, and `GET /__platform/storage` (inspect).
 */
export function storageRoutes(
  deployments: Deployments,
  auth: AuthService,
  objects: ObjectService,
  developers: Developers,
  adminToken: string,
  dev: boolean,
) {
  return async (ctx: Context, next: Next) => {
    const id = ctx.state.deployment as string;
    const record = await deployments.require(id);
    if (ctx.path === "/__platform/storage" && ctx.method === "GET") {
      await authoriseStorageListing(tokenOf(ctx), record, dev, { adminToken, developers });
      ctx.body = listingJson(await objects.list(id), objects.limits.listing);
      return;
    }
    if (ctx.path === "/storage" && ctx.method === "POST") {
      const identity = checkStorageWriter(record, await identityOf(ctx, auth, id), dev);
      const { bytes, contentType } = await uploadBody(ctx, objects.limits.fileSize);
      const stored = await objects.upload({
        deployment: id,
        quotaOwner: record.owner ?? `dev:${id}`,
        visibility: ctx.query.public === "true" ? "public" : "private",
        contentType,
        bytes,
        uploaderId: identity.userId,
        uploaderEmail: identity.email ?? null,
      });
      ctx.status = 201;
      ctx.body = {
        key: stored.key,
        url: `${ctx.protocol}://${ctx.host}/storage/${stored.key}`,
        size: stored.size,
        contentType: stored.contentType,
      };
      return;
    }
    const match = /^\/storage\/([^/]+)\/([^/]+)$/.exec(ctx.path);
    if (!match) {
      if (ctx.path === "/storage" || ctx.path.startsWith("/storage/"))
        throw new PlatformError("not_found", "No such object.");
      await next();
      return;
    }
    const visibility = visibilityOf(match[1]);
    const objectId = match[2] as string;
    if (ctx.method === "DELETE") {
      const identity = checkStorageWriter(record, await identityOf(ctx, auth, id), dev);
      await objects.remove(id, visibility, objectId, { kind: "uploader", userId: identity.userId });
      ctx.status = 204;
      return;
    }
    if (ctx.method !== "GET" && ctx.method !== "HEAD") throw new PlatformError("not_found", "No such route.");
    const cache = checkStorageReader(record, await identityOf(ctx, auth, id), visibility, dev);
    const object = await objects.record(id, visibility, objectId);
    if (!object) throw new PlatformError("not_found", "No such object.");
    const bytes = await objects.bytes(object);
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Content-Security-Policy", DOWNLOAD_CSP);
    ctx.set("Cache-Control", cache === "public" ? "public, max-age=3600" : "private, no-store");
    if (mustDownloadAsAttachment(object.contentType)) {
      ctx.set("Content-Disposition", `attachment; filename="${object.id}"`);
      ctx.type = "application/octet-stream";
    } else {
      ctx.set("Content-Type", object.contentType);
    }
    ctx.body = bytes;
  };
}
