import {
  type CapsuleDeclaration,
  type EndpointDeclaration,
  LIMITS,
  printableJson,
  UNPRINTABLE,
} from "../../sdk/protocol/index.js";
import { checkSchemaSpec, isValidName, PlatformError } from "../../sdk/values/index.js";

const RESERVED_PREFIXES = ["/api/", "/storage", "/__platform"];

/**
 * Whether a path belongs to the platform's own routes (`/api/*`, `/storage*`, `/__platform*`), which
 * answer before a capsule's endpoints and client files: neither may be declared there.
 */
export function isReservedPath(path: string): boolean {
  return path === "/api" || RESERVED_PREFIXES.some((prefix) => path.startsWith(prefix));
}

/**
 * A path as a request's can be: the characters a URL path keeps unescaped. A request's path is
 * ASCII (anything else arrives %-escaped, and escapes are not decoded before matching), so a
 * declared `/café` or `/a%20b` would never be matched; nor would `//x` or `/./x` reach it as
 * proxies pass them (they merge slashes and resolve dot segments), while the host would.
 */
const REACHABLE_PATH = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]+$/;

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);

function fail(message: string): never {
  throw new PlatformError("bad_request", message);
}

function names(list: unknown, what: string): string[] {
  if (!Array.isArray(list)) fail(`The capsule declaration has no ${what} list.`);
  for (const name of list)
    if (typeof name !== "string" || !isValidName(name))
      fail(`${what} name ${JSON.stringify(name)} must be a letter followed by letters, digits or _.`);
  return list as string[];
}

const MOVE_TO_V1 =
  "move the capsule to database API v1 (run `platform migrate` on it, then redeploy); the legacy API has neither";

/**
 * A legacy (v0) capsule gets the snapshot runtime only: no declared indexes, endpoints, `userId()`
 * fields or guest-upgrade hooks (docs/capsules.md "Versioning": those need database API v1).
 */
function checkLegacy(declaration: CapsuleDeclaration): void {
  for (const [table, spec] of Object.entries(declaration.schema.tables)) {
    for (const [field, fieldSpec] of Object.entries(spec.fields)) {
      if (fieldSpec.kind === "userId")
        fail(`Legacy capsules cannot use userId() fields (${table}.${field}): ${MOVE_TO_V1}.`);
    }
    if (Object.keys(spec.indexes).length > 0)
      fail(`Legacy capsules cannot declare indexes (${table}): ${MOVE_TO_V1}.`);
  }
  if (declaration.auth?.hasGuestUpgradeHook)
    fail(`Legacy capsules cannot use auth.onGuestUpgrade: ${MOVE_TO_V1}.`);
  if (Array.isArray(declaration.endpoints) && declaration.endpoints.length > 0)
    fail(`Legacy capsules cannot declare endpoints: ${MOVE_TO_V1}.`);
}

/**
 * Checks a declaration read out of an isolate. The capsule is untrusted, so everything is checked
 * again here: schema, handler names, endpoint routes (no shadowing of platform routes, no
 * duplicates) and auth settings.
 */
export function checkDeclaration(value: unknown): CapsuleDeclaration {
  if (typeof value !== "object" || value === null) fail("The capsule did not declare itself.");
  const declaration = value as CapsuleDeclaration;
  if (declaration.apiVersion !== 1 && declaration.apiVersion !== 0)
    fail(`Unsupported database API version ${JSON.stringify(declaration.apiVersion)}.`);
  const schema = checkSchemaSpec(declaration.schema);
  if (declaration.apiVersion === 0) checkLegacy(declaration);
  names(declaration.queries, "query");
  names(declaration.mutations, "mutation");
  if (!Array.isArray(declaration.endpoints)) fail("The capsule declaration has no endpoint list.");
  const functions = declaration.queries.length + declaration.mutations.length + declaration.endpoints.length;
  if (functions > LIMITS.functionsPerCapsule)
    fail(
      `The capsule declares ${functions} queries, mutations and endpoints; a capsule may declare ${LIMITS.functionsPerCapsule} together. Split it into several deployments.`,
    );
  const routes = new Set<string>();
  const endpoints: EndpointDeclaration[] = [];
  for (const endpoint of declaration.endpoints) {
    const { name, method, path, readOnly } = endpoint ?? {};
    if (typeof name !== "string") fail(`An endpoint's name must be a string, not ${typeof name}.`);
    // Its name (the key in the capsule's `endpoints`) is shown in `platform dev`, logs and the
    // dashboard: escape codes in it set the developer's clipboard and hid the line.
    if (name === "" || UNPRINTABLE.test(name))
      fail(
        `An endpoint's name must be text without control characters or marks that reorder text, not ${printableJson(name)}.`,
      );
    if (typeof method !== "string" || !METHODS.has(method))
      fail(`Endpoint ${String(name)} has an unsupported method ${JSON.stringify(method)}.`);
    if (typeof path !== "string" || !path.startsWith("/") || path.length > 512 || /[?#\s]/.test(path)) {
      fail(
        `Endpoint ${String(name)} needs a path beginning with "/" (no query string), got ${JSON.stringify(path)}.`,
      );
    }
    if (!REACHABLE_PATH.test(path) || /\/\/|\/\.\.?(\/|$)/.test(path))
      fail(
        `Endpoint ${String(name)} has a path no request can reach as written, ${JSON.stringify(path)}: use ASCII letters, digits and -._~!$&'()*+,;=:@ between single slashes, without "." or ".." segments or %-escapes.`,
      );
    if (isReservedPath(path)) {
      fail(
        `Endpoint ${String(name)} uses ${path}, which is reserved for the platform (/api/*, /storage*, /__platform/*).`,
      );
    }
    const route = `${method} ${path}`;
    if (routes.has(route)) fail(`Two endpoints are declared for ${route}.`);
    routes.add(route);
    endpoints.push({ name, method, path, readOnly: readOnly === true });
  }
  const auth = declaration.auth;
  if (typeof auth !== "object" || auth === null) fail("The capsule declaration has no auth settings.");
  // What was checked, and nothing else: the record stores it, and every listing of deployments reads it.
  return {
    apiVersion: declaration.apiVersion,
    schema,
    queries: [...declaration.queries],
    mutations: [...declaration.mutations],
    endpoints,
    auth: {
      requireSignIn: auth.requireSignIn === true,
      hasGuestUpgradeHook: auth.hasGuestUpgradeHook === true,
    },
  };
}
