/**
 * The access matrix of what the dashboard's storage and settings pages call on `/v1`: the file
 * listing and a file's bytes (new), and the deployment's settings read, change and delete and the
 * owner's file delete (existing routes the pages now use). Every caller x deployment state x
 * route, each cell asserting the exact status and error code, in the style of
 * dashboard-access-matrix.test.ts; a refused delete leaves the file or deployment in place. Then
 * what a download carries: the same sandboxing headers as an app download.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { sessionRequest } from "./helpers/dashboard.js";
import {
  type CellOutcome,
  type DashboardMatrix,
  expectEveryCell,
  type MatrixState as State,
  sendAs,
  startDashboardMatrix,
  type MatrixCaller as Who,
} from "./helpers/dashboard-matrix.js";
import type { TestHost } from "./helpers/host.js";

const ROUTES = ["files", "download", "settings", "change", "delete file", "delete deployment"] as const;
type RouteName = (typeof ROUTES)[number];

/** A well-formed object id that names no file. */
const NO_FILE = "private/AAAAAAAAAAAAAAAAAAAAAA";

let matrix: DashboardMatrix;
let host: TestHost;
let doomed = 0;

beforeAll(async () => {
  matrix = await startDashboardMatrix();
  host = matrix.host;
});
afterAll(() => host.dispose());

/** Uploads a file to the claimed deployment as its member (unclaimed ones take no uploads). */
async function upload(body: string | Buffer, contentType: string): Promise<string> {
  const stored = await sendRequest(`${host.deploymentUrl("claimed")}/storage`, {
    method: "POST",
    headers: { authorization: `Bearer ${matrix.tokens.get("claimed/account")}`, "content-type": contentType },
    body,
  });
  expect(stored.status, stored.text()).toBe(201);
  return stored.json<{ key: string }>().key;
}

/** A file of `state`'s deployment: a real one on the claimed deployment, else an unknown key. */
async function fileOf(state: State): Promise<string> {
  return state === "claimed" ? upload("matrix", "text/plain") : NO_FILE;
}

/** A fresh deployment in `state`, for one delete cell. */
async function freshDeployment(state: State): Promise<string> {
  const id = `doomed-${++doomed}`;
  const made = await host.admin("/v1/deploys", "POST", {
    id,
    code: matrix.code,
    ...(state === "claimed" ? { owner: matrix.ownerId } : {}),
  });
  expect(made.status, made.text()).toBe(201);
  return id;
}

/** What `route` asks: method, path, body, and how to see afterwards whether a delete happened. */
async function request(
  state: State,
  route: RouteName,
): Promise<[string, string, unknown, (() => Promise<boolean>) | undefined]> {
  const base = `/v1/deploys/${state}`;
  switch (route) {
    case "files":
      return ["GET", `${base}/storage`, undefined, undefined];
    case "download":
      return ["GET", `${base}/storage/${await fileOf(state)}`, undefined, undefined];
    case "settings":
      return ["GET", base, undefined, undefined];
    case "change":
      return ["PATCH", base, { restricted: false, approved: ["member@example.com"] }, undefined];
    case "delete file": {
      const key = await fileOf(state);
      const exists = async () => (await host.admin(`${base}/storage/${key}`, "GET")).status === 200;
      return ["DELETE", `/v1/me/deploys/${state}/storage/${key}`, undefined, exists];
    }
    case "delete deployment": {
      const id = await freshDeployment(state);
      const exists = async () => (await host.admin(`/v1/deploys/${id}`, "GET")).status === 200;
      return ["DELETE", `/v1/deploys/${id}`, undefined, exists];
    }
  }
}

/** The expected outcome of one cell: the success status, or [status, code]. */
function expected(who: Who, state: State, route: RouteName): CellOutcome {
  const success = route.startsWith("delete") ? 204 : 200;
  if (who === "anonymous") return [401, "unauthorized"];
  if (["claim token", "account", "guest", "other developer"].includes(who)) return [403, "forbidden"];
  if (who === "owner session without CSRF" || who === "owner session from the app's page")
    return [403, "forbidden"];
  // The operator manages every deployment; the owner only theirs (the unclaimed one is nobody's).
  const allowed = who === "operator" || who === "operator session" || state === "claimed";
  if (!allowed) return [403, "forbidden"];
  if (route === "download" && state === "unclaimed") return [404, "not_found"];
  return success;
}

it("answers every cell of {caller} x {deployment state} x {storage and settings route} exactly", async () => {
  await expectEveryCell(ROUTES, expected, async (who, state, route, want, fail) => {
    const [method, path, body, exists] = await request(state, route);
    const response = await sendAs(matrix, who, state, method, path, body);
    // A delete happened exactly when it was allowed (an unknown file was never there).
    const real = route === "delete deployment" || state === "claimed";
    if (exists && real && (await exists()) !== (typeof want !== "number"))
      fail("the delete's effect does not match its answer");
    return response;
  });
}, 300_000);

it("serves a file to its owner with an app download's headers: sandboxed, never cached, other types as attachments", async () => {
  const page = await upload(Buffer.from("PK\x03\x04 not really a zip"), "application/zip");
  const png = Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
    "base64",
  );
  const image = await upload(png, "image/png");
  const html = await sessionRequest(host, matrix.ownerSession, `/v1/deploys/claimed/storage/${page}`);
  expect(html.status).toBe(200);
  expect(html.headers["content-disposition"]).toMatch(/^attachment/);
  expect(html.headers["content-type"]).toBe("application/octet-stream");
  expect(html.headers["content-security-policy"]).toContain("sandbox");
  expect(html.headers["x-content-type-options"]).toBe("nosniff");
  expect(html.headers["cache-control"]).toBe("private, no-store");
  const shown = await sessionRequest(host, matrix.ownerSession, `/v1/deploys/claimed/storage/${image}`);
  expect(shown.status).toBe(200);
  expect(shown.headers["content-type"]).toBe("image/png");
  expect(shown.headers["content-disposition"]).toBeUndefined();
  expect(Buffer.from(shown.body).equals(png)).toBe(true);

  const listed = await sessionRequest(host, matrix.ownerSession, "/v1/deploys/claimed/storage");
  const keys = listed.json<{ objects: Array<{ key: string; uploaderEmail: string }> }>().objects;
  expect(keys.slice(0, 2).map((o) => o.key)).toEqual([image, page]);
  expect(keys[0]?.uploaderEmail).toBe("member@example.com");
  // A malformed key or visibility is a 404, never a path into another deployment's files.
  for (const bad of ["public/..%2F..", "secret/AAAAAAAAAAAAAAAAAAAAAA", `public/${image.split("/")[1]}`])
    expect(
      (await sessionRequest(host, matrix.ownerSession, `/v1/deploys/claimed/storage/${bad}`)).status,
    ).toBe(404);
  expect((await host.admin(`/v1/deploys/unclaimed/storage/${image}`, "GET")).status).toBe(404);
}, 60_000);

it("shows env variable names, never their values", async () => {
  const made = await host.admin("/v1/deploys", "POST", {
    id: "with-env",
    code: matrix.code,
    owner: matrix.ownerId,
    env: { STRIPE_KEY: "sk_live_value", API_URL: "https://example.com/hidden" },
  });
  expect(made.status, made.text()).toBe(201);
  const shown = await sessionRequest(host, matrix.ownerSession, "/v1/deploys/with-env");
  expect(shown.json()).toMatchObject({ envKeys: 2, envNames: ["API_URL", "STRIPE_KEY"] });
  expect(shown.text()).not.toContain("sk_live_value");
  expect(shown.text()).not.toContain("example.com/hidden");
}, 60_000);
