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
   * `url` with the client's token as `?platform_token=`, for an `<img>` of a private object or of
   * an app that requires sign-in (an image element sends no Authorization header). Only the app's
   * own storage URLs get the token; any other URL (another site's, a stored link a user wrote)
   * comes back as it is, so rendering user-supplied URLs never hands the user's identity away.
   */
  authorizedUrl(url: string): Promise<string>;
}

const KEY = /^(public|private)\/[A-Za-z0-9_-]{1,128}$/;

/** Builds the storage client of a deployment at `baseUrl`. */
export function createStorageClient(baseUrl: string, fetch: FetchFunction, auth: CallAuth): StorageClient {
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
      const storage = new URL(`${baseUrl}/storage/`);
      const target = new URL(url, baseUrl);
      if (target.origin !== storage.origin || !target.pathname.startsWith(storage.pathname)) return url;
      const token = await auth.validToken();
      if (!token) return url;
      target.searchParams.set("platform_token", token);
      return target.toString();
    },
  };
}
