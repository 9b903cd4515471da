import { PlatformError } from "../values/index.js";
import { type CallAuth, callWithAuth } from "./http-call.js";
import type { FetchFunction } from "./transport.js";

/** A stored object, as `POST /storage` answers (docs/http-api.md "Storage"). */
export interface UploadedObject {
  /** `public/<id>` or `private/<id>`; assigned by storage. */
  key: string;
  /** Absolute URL of the object. */
  url: string;
  /** Stored byte length. */
  size: number;
  /** Stored MIME type, from the upload's type. */
  contentType: string;
}

/** `client.storage`: uploads and deletes at the app's own origin (docs/client.md). */
export interface StorageClient {
  /**
   * Uploads a browser `File` or `Blob` (Node: `Blob`/`File` too); private unless
   * `options.public`. Its `type` becomes the stored content type (`application/octet-stream` when
   * empty). Fails with the server's code: `too_large`, `quota_exceeded`, `blocked_type`, ...
   */
  upload(file: Blob, options?: { public?: boolean }): Promise<UploadedObject>;
  /** Deletes an object by key; deleting a missing object succeeds. */
  delete(key: string): Promise<void>;
  /**
   * `url` (a stored file's) with a download token as `?platform_download=`, for an `<img>` or a
   * link to a private file or one of an app that requires sign-in (an image element sends no
   * Authorization header). The token downloads that one file as the signed-in user, for an hour,
   * and nothing else: anyone the URL reaches gets the file, not the user's identity. `url` as it
   * is when nobody is signed in.
   */
  authorizedUrl(url: string): Promise<string>;
}

const KEY = /^(public|private)\/[A-Za-z0-9_-]{1,128}$/;

/** The path of a stored file, and its key. */
const STORED_PATH = /^\/storage\/((?:public|private)\/[A-Za-z0-9_-]{1,128})$/;

/** Download tokens kept at most (a page of pictures asks once per picture and user). */
const KEPT_DOWNLOAD_TOKENS = 500;

/** A download token is asked for again this long before it ends, so a URL handed out works a while. */
const RENEW_BEFORE_MS = 10 * 60_000;

/**
 * The download tokens a client got, by the identity token they were got with and the file: a
 * user who signs out or another who signs in never gets the last one's.
 */
function downloadTokens(baseUrl: string, fetch: FetchFunction, auth: CallAuth) {
  const kept = new Map<string, { token: string; expiresAt: number }>();
  return {
    async tokenFor(identity: string, key: string): Promise<string> {
      const id = `${identity}\u0000${key}`;
      const known = kept.get(id);
      if (known && known.expiresAt - Date.now() > RENEW_BEFORE_MS) return known.token;
      const got = (await callWithAuth(fetch, auth, `${baseUrl}/storage/download-tokens`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key }),
      })) as { token: string; expiresAt: number };
      kept.delete(id);
      if (kept.size >= KEPT_DOWNLOAD_TOKENS) kept.delete(kept.keys().next().value as string);
      kept.set(id, got);
      return got.token;
    },
  };
}

/** Builds the storage client of a deployment at `baseUrl`. */
export function createStorageClient(baseUrl: string, fetch: FetchFunction, auth: CallAuth): StorageClient {
  const downloads = downloadTokens(baseUrl, fetch, auth);
  return {
    async upload(file, options = {}) {
      if (typeof Blob === "undefined" || !(file instanceof Blob))
        throw new PlatformError("invalid_request", "storage.upload needs a File or Blob.");
      const query = options.public ? "?public=true" : "";
      return (await callWithAuth(fetch, auth, `${baseUrl}/storage${query}`, {
        method: "POST",
        headers: { "content-type": file.type || "application/octet-stream" },
        body: file,
      })) as UploadedObject;
    },
    async delete(key) {
      if (typeof key !== "string" || !KEY.test(key))
        throw new PlatformError("invalid_request", "A storage key looks like public/<id> or private/<id>.");
      await callWithAuth(fetch, auth, `${baseUrl}/storage/${key}`, { method: "DELETE" });
    },
    async authorizedUrl(url) {
      const token = await auth.validToken();
      if (!token) return url;
      const target = new URL(url, baseUrl);
      const key = STORED_PATH.exec(target.pathname)?.[1];
      if (!key)
        throw new PlatformError(
          "invalid_request",
          "authorizedUrl takes the URL of a stored file: .../storage/public/<id> or .../storage/private/<id>.",
        );
      target.searchParams.delete("platform_token");
      target.searchParams.set("platform_download", await downloads.tokenFor(token, key));
      return target.toString();
    },
  };
}
