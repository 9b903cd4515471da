/**
 * The operator API paths of one stored file. A key comes from the host's listing, but the dashboard
 * does not trust it to be the `<public|private>/<id>` the host makes: put into a path as it is, a
 * key with `/`, `..`, `?` or `#` would name another `/v1` route, and a delete would send the
 * session's CSRF header there. So each part is escaped as one path segment, and a key that no
 * escape can keep to itself (a part that is empty, `.` or `..`, which URLs resolve even escaped)
 * is refused before anything is sent.
 */

/** The visibilities a stored file's key starts with. */
const VISIBILITIES = new Set(["public", "private"]);

/**
 * `key` (`<visibility>/<id>`) as two escaped path segments; throws for a key that is not of that
 * shape, so no request is made for it.
 */
export function objectSegments(key: string): string {
  const slash = key.indexOf("/");
  const visibility = key.slice(0, slash);
  const id = key.slice(slash + 1);
  if (slash < 0 || !VISIBILITIES.has(visibility) || id === "" || id === "." || id === "..")
    throw new Error(`${JSON.stringify(key)} is not a stored file's key (<public|private>/<id>).`);
  return `${visibility}/${encodeURIComponent(id)}`;
}

/** `GET /v1/deploys/<deployment>/storage/<key>`: the file's bytes. */
export function objectPath(deployment: string, key: string): string {
  return `/v1/deploys/${encodeURIComponent(deployment)}/storage/${objectSegments(key)}`;
}

/** `DELETE /v1/me/deploys/<deployment>/storage/<key>`: the owner's delete of the file. */
export function objectDeletePath(deployment: string, key: string): string {
  return `/v1/me/deploys/${encodeURIComponent(deployment)}/storage/${objectSegments(key)}`;
}
