/**
 * The operator API paths of a stored file (dashboard/object-path.ts): whatever its key, a file's
 * download and delete go to that file's route and nowhere else. Put into the path as it was, a key
 * like `../../../deploys/victim` sent the dashboard's DELETE (with its CSRF header) to another
 * `/v1` route, and `?`/`#` cut the path short.
 */
import { describe, expect, it } from "vitest";
import { objectDeletePath, objectPath } from "../dashboard/object-path.js";

const ID = "AAAAAAAAAAAAAAAAAAAAAA";

/** How a browser resolves `path` on the dashboard's origin (dot segments, query, fragment). */
function resolved(path: string): URL {
  return new URL(path, "https://host.example");
}

describe("a stored file's paths", () => {
  it("a key the host makes maps to its route", () => {
    expect(objectPath("chat", `public/${ID}`)).toBe(`/v1/deploys/chat/storage/public/${ID}`);
    expect(objectDeletePath("chat", `private/${ID}`)).toBe(`/v1/me/deploys/chat/storage/private/${ID}`);
  });

  const hostile = [
    "public/../../../deploys/victim",
    "private/../../sessions",
    "public/a/b",
    "public/x?y=1",
    "public/x#frag",
    "public/%2e%2e/%2e%2e/victim",
    "public/a\\..\\..\\victim",
  ];
  for (const key of hostile)
    it(`${JSON.stringify(key)} stays one file of the deployment's storage`, () => {
      const visibility = key.slice(0, key.indexOf("/"));
      const object = key.slice(key.indexOf("/") + 1);
      for (const [path, route] of [
        [objectPath("chat", key), `/v1/deploys/chat/storage/${visibility}/`],
        [objectDeletePath("chat", key), `/v1/me/deploys/chat/storage/${visibility}/`],
      ]) {
        const url = resolved(path as string);
        expect(url.pathname).toBe(path); // nothing for the browser to resolve
        expect(url.search + url.hash).toBe("");
        expect(url.pathname.startsWith(route as string)).toBe(true);
        const segment = url.pathname.slice((route as string).length);
        expect(segment).not.toContain("/");
        expect(decodeURIComponent(segment)).toBe(object);
      }
    });

  for (const key of ["public/..", "private/.", "public/", "../public/x", "other/x", "x", ""])
    it(`${JSON.stringify(key)} is refused before any request`, () => {
      expect(() => objectPath("chat", key)).toThrow(/not a stored file's key/);
      expect(() => objectDeletePath("chat", key)).toThrow(/not a stored file's key/);
    });
});
