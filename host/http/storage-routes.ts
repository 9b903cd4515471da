import Router, { type RouterMiddleware } from "@koa/router";
import type { Context, Middleware } from "koa";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { authoriseStorageListing, checkStorageReader, checkStorageWriter } from "../access/index.js";
import type { AuthService, Developers } from "../auth/index.js";
import type { DeploymentRecord, DeploymentService } from "../deployments/index.js";
import { downloadType, type ObjectRecord, type ObjectService, type Visibility } from "../storage/index.js";
import { clientAddressKey, reachedOverTls } from "./client-address.js";
import { bearerToken, storageToken } from "./credentials.js";
import type { RequestQuota } from "./request-quota.js";
import { ownPaths } from "./routing.js";
import type { TokenGuesses } from "./token-guesses.js";
import { uploadBody } from "./upload-body.js";

/** The sandboxing policy every download carries: nothing runs, nothing loads. */
export const DOWNLOAD_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox";

/**
 * Answers with the object `object`, as stored (no compression: images and archives are compressed
 * already, and the length stays exact), with the download headers: `nosniff`, the sandboxing CSP,
 * `cacheControl`, and its served type (an attachment unless safe inline).
 */
export async function sendObject(
  ctx: Context,
  objects: ObjectService,
  object: ObjectRecord,
  cacheControl: string,
): Promise<void> {
  // A HEAD is answered from the record: no blob is opened, no SVG checked again (one not marked
  // checked yet is announced as the attachment it is until its next GET).
  const { body, type } =
    ctx.method === "HEAD"
      ? { body: null, type: downloadType(object.contentType, object.markupRules) }
      : await objects.download(object);
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Content-Security-Policy", DOWNLOAD_CSP);
  // A download asked for with `?platform_token=` never hands its URL, token and all, to a site
  // the file links to.
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.set("Cache-Control", cacheControl);
  ctx.compress = false;
  if (type.attachment) ctx.set("Content-Disposition", `attachment; filename="${object.id}"`);
  ctx.set("Content-Type", type.contentType);
  if (body) ctx.body = body;
  else ctx.status = 200;
  // A blob of another length than its record says fails the answer (object-downloads.ts), never
  // sends more or fewer bytes than this on a connection that goes on.
  ctx.length = object.size;
}

/** Public downloads on open apps may be cached by anyone for `LIMITS.publicCacheSeconds`. */
const PUBLIC_CACHE = `public, max-age=${LIMITS.publicCacheSeconds}`;

/** Storage routes read the bearer token or `?platform_token=` (see `credentials.ts`). */
const tokenOf = storageToken;

async function identityOf(
  ctx: Context,
  auth: AuthService,
  deployment: string,
): Promise<BridgeIdentity | null> {
  const token = tokenOf(ctx);
  return token ? auth.authenticate(deployment, token) : null;
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

const LISTING = "/__platform/storage";
const OBJECT = "/storage/:visibility/:object";
const OBJECT_PATH = /^\/storage\/([^/]+)\/([^/]+)$/;

/** The paths storage answers for; every other path at the origin goes on to the endpoints. */
function isStoragePath(path: string): boolean {
  return path === "/storage" || path.startsWith("/storage/") || path === LISTING;
}

/**
 * An object route's visibility and id as the URL spells them (router params are percent-decoded;
 * object paths never are).
 */
function objectOf(ctx: Context): { visibility: Visibility; objectId: string } {
  const [, visibility, objectId] = OBJECT_PATH.exec(ctx.path) as RegExpExecArray;
  return { visibility: visibilityOf(visibility), objectId: objectId as string };
}

/**
 * What no storage route took: the listing path with another method is a plain 404, an object path
 * with another method is "No such route." (after its visibility is checked), anything else under
 * `/storage` is "No such object.".
 */
const notStored: Middleware = (ctx) => {
  if (ctx.path === LISTING) return;
  if (!OBJECT_PATH.test(ctx.path)) throw new PlatformError("not_found", "No such object.");
  objectOf(ctx);
  throw new PlatformError("not_found", "No such route.");
};

/**
 * The built-in storage routes at a deployment's origin: `POST /storage`,
 * `GET`/`DELETE /storage/<public|private>/<id>`, and `GET /__platform/storage` (inspect). The
 * deployment must exist before any of them (or their 404s) answers.
 */
export function storageRoutes(
  deployments: DeploymentService,
  auth: AuthService,
  objects: ObjectService,
  developers: Developers,
  adminToken: string,
  dev: boolean,
  quota: RequestQuota,
  /** The listing takes the operator's token: a refused one counts as a guess at it. */
  guesses: TokenGuesses,
  /** Whether `X-Forwarded-Proto` of the one proxy in front says how a client reached the host. */
  trustProxy = false,
): RouterMiddleware {
  const router = new Router({ sensitive: true, strict: true });
  router.get(LISTING, async (ctx, next) => {
    // The router answers HEAD with GET routes; the listing is GET only.
    if (ctx.method !== "GET") return next();
    const record = ctx.state.record as DeploymentRecord;
    // In the Authorization header only: the listing takes developers' and the operator's tokens,
    // which in a URL reach proxies' logs, and a tenant's service worker at its own origin.
    const token = bearerToken(ctx);
    const counted = token !== undefined && !dev;
    const address = counted ? guesses.keyOf(ctx) : "";
    if (counted) guesses.checkMayTry(address);
    try {
      await authoriseStorageListing(token, record, dev, { adminToken, developers });
    } catch (error) {
      if (counted && isPlatformError(error) && error.code === "forbidden") guesses.take(address);
      throw error;
    }
    // It names uploaders' emails: no cache keeps it.
    ctx.set("cache-control", "no-store");
    ctx.body = listingJson(await objects.list(record), objects.limits.listing);
  });

  router.post("/storage", async (ctx) => {
    const id = ctx.state.deployment as string;
    const record = ctx.state.record as DeploymentRecord;
    const identity = checkStorageWriter(record, await identityOf(ctx, auth, id), dev);
    const { bytes, contentType } = await uploadBody(ctx, objects.limits.fileSize);
    const stored = await objects.upload({
      deployment: id,
      quotaOwner: record.owner ?? `dev:${id}`,
      incarnation: record.incarnation ?? null,
      visibility: ctx.query.public === "true" ? "public" : "private",
      contentType,
      bytes,
      uploaderId: identity.userId,
      uploaderEmail: identity.email ?? null,
    });
    ctx.status = 201;
    ctx.body = {
      key: stored.key,
      // As the client reached the host: behind a TLS proxy, https (a public URL is a read credential).
      url: `${reachedOverTls(ctx.req, trustProxy) ? "https" : ctx.protocol}://${ctx.host}/storage/${stored.key}`,
      size: stored.size,
      contentType: stored.contentType,
    };
  });

  router.delete(OBJECT, async (ctx) => {
    const id = ctx.state.deployment as string;
    const record = ctx.state.record as DeploymentRecord;
    const { visibility, objectId } = objectOf(ctx);
    const identity = checkStorageWriter(record, await identityOf(ctx, auth, id), dev);
    await objects.remove(record, visibility, objectId, { kind: "uploader", userId: identity.userId });
    ctx.status = 204;
  });

  router.get(OBJECT, async (ctx) => {
    const id = ctx.state.deployment as string;
    const record = ctx.state.record as DeploymentRecord;
    const { visibility, objectId } = objectOf(ctx);
    const cache = checkStorageReader(record, await identityOf(ctx, auth, id), visibility, dev);
    const object = await objects.record(record, visibility, objectId);
    if (!object) throw new PlatformError("not_found", "No such object.");
    await sendObject(ctx, objects, object, cache === "public" ? PUBLIC_CACHE : "private, no-store");
  });

  const routes = router.routes();
  // Charged to the client's address before the deployment is looked up (no identity is read yet),
  // in a bucket of their own, one for all deployments: a page of pictures does not eat into its
  // data calls, no upload or download is free of the quota, and naming many deployments (each
  // lookup a read of the database) does not multiply it.
  return ownPaths(isStoragePath, async (ctx, next) => {
    const key = `storage\u0000${clientAddressKey(quota.clientAddress(ctx.req))}`;
    quota.charge(key);
    ctx.state.record = await deployments.require(ctx.state.deployment as string);
    await routes(ctx, () => notStored(ctx, next));
    // A download costs its size too, as a client file does: one request each, 5 MiB files came at
    // the rate of empty ones.
    if (ctx.method === "GET" && ctx.status === 200 && typeof ctx.length === "number")
      quota.chargeAnswer(key, ctx.length);
  });
}
