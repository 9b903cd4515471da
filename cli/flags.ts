import { InvalidArgumentError } from "commander";
import { checkDeploymentId } from "../host/deployments/records.js";
import { OBJECT_KEY } from "../host/storage/object-limits.js";

/**
 * Parsers for flag values, given to commander's `Option.argParser`: a bad value is refused while
 * the command line is parsed, before anything starts, with commander's usage error
 * (`error: option '--port <port>' argument 'abc' is invalid. <why>`) and exit code 2.
 */

/** `--port`: a whole number 0-65535 (0 asks the system for a free port where the command listens). */
export function parsePort(value: string): number {
  const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!(port <= 65535))
    throw new InvalidArgumentError("A port is a whole number from 0 to 65535, e.g. 8080.");
  return port;
}

/**
 * `--host`: the control plane's origin. A value without a scheme (`localhost:8080`) means
 * `http://`, as curl reads it; anything that is not an http(s) origin is refused with what to
 * write instead. Returns the origin (`http://localhost:8080`), the form logins are stored under.
 */
export function parseHostUrl(value: string): string {
  const url = URL.canParse(withScheme(value)) ? new URL(withScheme(value)) : undefined;
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "")
    throw new InvalidArgumentError(
      "Write the host's control plane URL, e.g. http://localhost:8080 (or localhost:8080).",
    );
  if (url.pathname !== "/" || url.search !== "" || url.hash !== "")
    throw new InvalidArgumentError(
      `Write only the origin, without a path: ${url.origin} (the CLI adds /v1/... itself).`,
    );
  // A token is never sent to a plain-HTTP origin of another machine unless the user allows it
  // (cli/token-transport.ts): checked where it is sent, whichever flag named the host.
  return url.origin;
}

/** `value` with `http://` in front when it names no scheme (`localhost:8080`, `todo.localhost:8080`). */
export function withScheme(value: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
}

/**
 * Refuses `--host` without a deployment id (a usage error): without an id the command talks to the
 * dev server, and `--host` would otherwise be ignored without a word.
 */
export function requireIdWithHost(
  deployId: string | undefined,
  host: string | undefined,
  usage: string,
): void {
  if (host !== undefined && !deployId)
    throw new InvalidArgumentError(
      `--host needs the deployment's id: ${usage} (without an id, the command talks to the dev server).`,
    );
}

/**
 * `--name <id>`, or a `[deploy_id]` argument: a valid deployment id, or a usage error saying what
 * one is (commander names the value). An id goes into URL paths (`/v1/deploys/<id>/logs`) and host names
 * (`<id>.<domain>`): `../..` or `x@evil` reached other routes and hosts with the owner's token.
 */
export function parseDeploymentId(flag: string): string {
  try {
    return checkDeploymentId(flag);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/**
 * A stored file's key argument (`platform storage get` and `delete`): the shape the host issues
 * (`public/<id>` or `private/<id>`, the id 22 characters of letters, digits, `_` and `-`), or a
 * usage error (commander names the value) before any request: the key goes into the URL's path, and dot segments
 * turned `private/../../../../../deploys/todo` into `DELETE /v1/deploys/todo` with the owner's
 * token (an attack review, 2026-12-06).
 */
export function parseObjectKey(key: string): string {
  if (!OBJECT_KEY.test(key))
    throw new InvalidArgumentError(
      "A file's key is public/<id> or private/<id>, as platform storage put and list print it.",
    );
  return key;
}

/** `key` as a URL path: each of its segments percent-encoded, so none can act as `..` or `?`. */
export function pathOf(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}
