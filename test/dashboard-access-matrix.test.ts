/**
 * The access matrix of the dashboard's data routes (`/v1/deploys/<id>/totals`, `/tables`, rows):
 * every caller x deployment state x route, each cell asserting the exact status and error code, in
 * the style of access-matrix.test.ts. Callers present their credential as a bearer token, or as a
 * dashboard session (cookie, CSRF header, same-origin request; without the CSRF header, or sent
 * from the app's page, it is refused). Host and callers: helpers/dashboard-matrix.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { HttpResponse } from "../cli/http.js";
import {
  type CellOutcome,
  type DashboardMatrix,
  expectEveryCell,
  MATRIX_STATES,
  type MatrixState as State,
  sendAs,
  startDashboardMatrix,
  type MatrixCaller as Who,
} from "./helpers/dashboard-matrix.js";

const ROUTES = ["totals", "tables", "rows", "row", "insert", "edit", "delete"] as const;
type RouteName = (typeof ROUTES)[number];

let matrix: DashboardMatrix;
let channel: Record<State, string>;

beforeAll(async () => {
  matrix = await startDashboardMatrix();
  channel = { claimed: "", unclaimed: "" };
  for (const state of MATRIX_STATES) {
    const seeded = await matrix.host.call(state, "mutation", "seed", {
      channels: ["general"],
      perChannel: 3,
    });
    channel[state] = seeded.json<{ value: string[] }>().value[0] as string;
  }
});
afterAll(() => matrix.host.dispose());

/** A fresh message of `state`'s deployment, made by someone allowed to, for edits and deletes. */
async function freshRow(state: State): Promise<string> {
  const creator = state === "claimed" ? matrix.tokens.get("owner") : matrix.host.adminToken;
  const made = await matrix.host.admin(
    `/v1/deploys/${state}/tables/messages/rows`,
    "POST",
    { channel: channel[state], body: "matrix" },
    creator,
  );
  expect(made.status, made.text()).toBe(201);
  return made.json<{ row: { id: string } }>().row.id;
}

/** What `route` asks: method, path and body. */
async function request(state: State, route: RouteName): Promise<[string, string, unknown]> {
  const base = `/v1/deploys/${state}`;
  switch (route) {
    case "totals":
      return ["GET", `${base}/totals`, undefined];
    case "tables":
      return ["GET", `${base}/tables`, undefined];
    case "rows":
      return ["GET", `${base}/tables/messages/rows?numItems=2`, undefined];
    case "row":
      return ["GET", `${base}/tables/messages/rows/${await freshRow(state)}`, undefined];
    case "insert":
      return ["POST", `${base}/tables/messages/rows`, { channel: channel[state], body: "cell" }];
    case "edit":
      return ["PATCH", `${base}/tables/messages/rows/${await freshRow(state)}`, { likes: 3 }];
    case "delete":
      return ["DELETE", `${base}/tables/messages/rows/${await freshRow(state)}`, undefined];
  }
}

async function attempt(who: Who, state: State, route: RouteName): Promise<HttpResponse> {
  const [method, path, body] = await request(state, route);
  return sendAs(matrix, who, state, method, path, body);
}

const WRITES: RouteName[] = ["insert", "edit", "delete"];

/** The expected outcome of one cell: the success status, or [status, code]. */
function expected(who: Who, state: State, route: RouteName): CellOutcome {
  const success = route === "insert" ? 201 : route === "delete" ? 204 : 200;
  if (who === "anonymous") return [401, "unauthorized"];
  if (["claim token", "account", "guest"].includes(who)) return [403, "forbidden"];
  if (
    who === "other developer" ||
    who === "owner session without CSRF" ||
    who === "owner session from the app's page"
  )
    return [403, "forbidden"];
  const operator = who === "operator" || who === "operator session";
  if (operator) return WRITES.includes(route) && state === "claimed" ? [403, "forbidden"] : success;
  // The owner developer (token or session): theirs is the claimed one; the unclaimed one is nobody's.
  return state === "claimed" ? success : [403, "forbidden"];
}

it("answers every cell of {caller} x {deployment state} x {data route} exactly", async () => {
  await expectEveryCell(ROUTES, expected, attempt);
}, 120_000);
