import { useEffect, useState } from "react";
import { ApiError, api, deployPath } from "./api.js";
import { dataUrlOf, fetchObject, previewable, saveObject } from "./download.js";
import { formatAge, formatSize, formatTime, plural } from "./format.js";
import { useLoad } from "./load.js";
import { objectDeletePath } from "./object-path.js";

/** One file as `GET /v1/deploys/<id>/storage` lists it. */
interface StoredFile {
  key: string;
  visibility: "public" | "private";
  size: number;
  contentType: string;
  uploaderId: string;
  uploaderEmail: string | null;
  uploadedAt: number;
}

interface Listing {
  objects: StoredFile[];
  totals: { count: number; bytes: number };
  newest: number;
  truncated: boolean;
}

function message(error: unknown): string {
  return error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
}

/**
 * A small preview of an image file, loaded through the operator API and shown from a `data:` URL:
 * one opened on its own ("Open image in new tab") has an opaque origin, where an SVG's script
 * could not reach the dashboard's cookies or CSRF token as it could from a same-origin `blob:`.
 */
function Preview({ deployment, file }: { deployment: string; file: StoredFile }) {
  const [url, setUrl] = useState<string>();
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    let live = true;
    fetchObject(deployment, file.key)
      .then(dataUrlOf)
      .then(
        (data) => live && setUrl(data),
        () => live && setFailed(true),
      );
    return () => {
      live = false;
    };
  }, [deployment, file.key]);
  if (failed) return <span className="muted">no preview</span>;
  if (!url) return <span className="muted">…</span>;
  return <img className="thumb" src={url} alt={`Preview of ${file.key}`} />;
}

/** One file's row: preview, facts, download and delete. */
function FileRow({
  deployment,
  file,
  onDeleted,
  onError,
}: {
  deployment: string;
  file: StoredFile;
  onDeleted: () => void;
  onError: (message: string) => void;
}) {
  const [busy, setBusy] = useState(false);
  async function download() {
    setBusy(true);
    try {
      await saveObject(deployment, file.key);
    } catch (error) {
      onError(message(error));
    } finally {
      setBusy(false);
    }
  }
  async function remove() {
    setBusy(true);
    try {
      await api(objectDeletePath(deployment, file.key), { method: "DELETE" });
      onDeleted();
    } catch (error) {
      onError(message(error));
      setBusy(false);
    }
  }
  return (
    <tr>
      <td>
        {previewable(file.contentType, file.size) ? <Preview deployment={deployment} file={file} /> : null}
      </td>
      <td>
        <code>{file.key}</code>
      </td>
      <td>{file.visibility}</td>
      <td className="num">{formatSize(file.size)}</td>
      <td>{file.contentType}</td>
      <td>{file.uploaderEmail ?? file.uploaderId}</td>
      <td title={formatTime(file.uploadedAt)}>{formatAge(file.uploadedAt)}</td>
      <td className="links">
        <button type="button" className="link" onClick={download} disabled={busy}>
          Download<span className="offscreen"> {file.key}</span>
        </button>{" "}
        <button type="button" className="danger" onClick={remove} disabled={busy}>
          Delete<span className="offscreen"> {file.key}</span>
        </button>
      </td>
    </tr>
  );
}

/** A deployment's stored files, newest first: previews of images, downloads, per-file delete. */
export function StoragePage({ deployment }: { deployment: string }) {
  const listing = useLoad(() => api<Listing>(deployPath(deployment, "/storage")), deployment);
  const [error, setError] = useState<string>();
  const data = listing.data;
  return (
    <section>
      <h1>
        Storage of <code>{deployment}</code>
      </h1>
      {data && (
        <p className="muted">
          {plural(data.totals.count, "file")}, {formatSize(data.totals.bytes)}.
          {data.truncated ? ` Showing the newest ${data.objects.length}.` : ""}
        </p>
      )}
      {(listing.error ?? error) && (
        <p className="error" role="alert">
          {listing.error ?? error}
        </p>
      )}
      {data && data.objects.length === 0 && <p className="notice">No files yet.</p>}
      {data && data.objects.length > 0 && (
        <div className="scroll">
          <table className="grid" aria-label={`Files of ${deployment}`}>
            <thead>
              <tr>
                <th>Preview</th>
                <th>Key</th>
                <th>Visibility</th>
                <th className="num">Size</th>
                <th>Type</th>
                <th>Uploader</th>
                <th>Age</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {data.objects.map((file) => (
                <FileRow
                  key={file.key}
                  deployment={deployment}
                  file={file}
                  onDeleted={() => {
                    setError(undefined);
                    listing.reload();
                  }}
                  onError={setError}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
