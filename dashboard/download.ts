/**
 * A stored file's bytes through the operator API (`GET /v1/deploys/<id>/storage/<key>`), which a
 * dashboard session reaches only with its CSRF header: so an `<img>` or a plain link cannot load
 * it, and previews and downloads go through `fetch` instead (previews as `data:` URLs, downloads as
 * `blob:` URLs re-typed so that they never render).
 */
import { ApiError, csrf } from "./api.js";
import { objectPath } from "./object-path.js";

/** Image types a preview shows (an `<img>` never runs a file's script, SVG included). */
const PREVIEWED = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/svg+xml",
]);

/** Previews are loaded only for files up to this size, so a page of photos stays light. */
export const PREVIEW_BYTES = 2 * 1024 * 1024;

/** Whether a file of `contentType` and `size` gets a preview. */
export function previewable(contentType: string, size: number): boolean {
  return PREVIEWED.has(contentType.split(";")[0]?.trim().toLowerCase() ?? "") && size <= PREVIEW_BYTES;
}

/** The bytes of `key` (`<visibility>/<id>`) of `deployment`, as a Blob of the type the host served. */
export async function fetchObject(deployment: string, key: string): Promise<Blob> {
  const path = objectPath(deployment, key); // throws for a key that is not a file's, before any request
  let response: Response;
  try {
    response = await fetch(path, {
      headers: { "x-platform-csrf": csrf() },
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError("unavailable", "The host did not answer. Is it running?", 0);
  }
  if (!response.ok) {
    const envelope = (await response.json().catch(() => undefined)) as
      | { error?: { code?: string; message?: string } }
      | undefined;
    throw new ApiError(
      envelope?.error?.code ?? "internal",
      envelope?.error?.message ?? `HTTP ${response.status}`,
      response.status,
    );
  }
  return response.blob();
}

/** `blob` as a `data:` URL (of the type it was served with). */
export function dataUrlOf(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/**
 * Saves `key` as a file. The blob is re-typed `application/octet-stream`, so even if its URL were
 * opened rather than saved, the browser would not render an uploaded page in the dashboard's origin.
 */
export async function saveObject(deployment: string, key: string): Promise<void> {
  const bytes = await fetchObject(deployment, key);
  const url = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = key.split("/").at(-1) ?? "file";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
