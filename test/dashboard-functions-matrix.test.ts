/**
 * The access matrix of what the dashboard's functions and logs pages call on `/v1`: the function
 * list, the per-handler figures, running a query and a mutation as an identity (new), and the
 * log (the existing route the live view follows). Every caller x deployment state x route, each
 * cell asserting the exact status and error code, in the style of dashboard-access-matrix.test.ts;
 * a refused run leaves no row and no `dashboard` log line behind, an allowed one leaves both.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type CellOutcome,
  type DashboardMatrix,
  expectEveryCell,
  type MatrixState as State,
  sendAs,
  startDashboardMatrix,
  type MatrixCaller as Who,
} from "./helpers/dashboard-matrix.js";

const ROUTES = ["functions", "stats", "logs", "run query", "run mutation"] as const;
type RouteName = (typeof ROUTES)[number];

let matrix: DashboardMatrix;

beforeAll(async () => {
  matrix = await startDashboardMatrix();
});
afterAll(() => matrix.host.dispose());

let runs = 0;

/** What `route` asks: method, path and body. */
function request(state: State, route: RouteName): [string, string, unknown] {
  const base = `/v1/deploys/${state}`;
  switch (route) {
    case "functions":
      return ["GET", `${base}/functions`, undefined];
    case "stats":
      return ["GET", `${base}/stats`, undefined];
    case "logs":
      return ["GET", `${base}/logs`, undefined];
    case "run query":
      return ["POST", `${base}/run`, { kind: "query", name: "latest", args: {}, as: { kind: "guest" } }];
    case "run mutation":
      return [
        "POST",
        `${base}/run`,
        {
          kind: "mutation",
          name: "post",
          args: { channel: "c", body: `run ${++runs}` },
          as: { kind: "guest" },
        },
      ];
  }
}

/** The expected outcome of one cell: 200, or [status, code]. */
function expected(who: Who, state: State, route: RouteName): CellOutcome {
  if (who === "anonymous") return [401, "unauthorized"];
  if (["claim token", "account", "guest", "other developer"].includes(who)) return [403, "forbidden"];
  if (who === "owner session without CSRF" || who === "owner session from the app's page")
    return [403, "forbidden"];
  const operator = who === "operator" || who === "operator session";
  // Reading: the operator any deployment, the owner theirs (the unclaimed one is nobody's).
  if (!operator && state !== "claimed") return [403, "forbidden"];
  // Running: the owner; the operator only where there is no owner (the data-editing rule).
  if (route.startsWith("run") && operator && state === "claimed") return [403, "forbidden"];
  return 200;
}

/** Rows of a deployment's messages and its `dashboard` run lines, as the operator sees them. */
async function effects(state: State): Promise<[number, number]> {
  const totals = (await matrix.host.admin(`/v1/deploys/${state}/totals`, "GET")).json<{ rows: number }>();
  const log = (await matrix.host.admin(`/v1/deploys/${state}/logs`, "GET")).text();
  const ran = log
    .split("\n")
    .filter((line) => line.includes('"handler":"dashboard"') && line.includes(" ran ")).length;
  return [totals.rows, ran];
}

it("answers every cell of {caller} x {deployment state} x {functions and logs route} exactly", async () => {
  await expectEveryCell(ROUTES, expected, async (who, state, route, want, fail) => {
    const [method, path, body] = request(state, route);
    const before = await effects(state);
    const response = await sendAs(matrix, who, state, method, path, body);
    if (route === "run query" && want === 200)
      expect(response.json<{ outcome: string }>().outcome, response.text()).toBe("ok");
    // A run is logged (and a mutation writes: a channel and a message) exactly when allowed.
    if (route.startsWith("run")) {
      const after = await effects(state);
      const rows = route === "run mutation" && want === 200 ? 2 : 0;
      const wanted = [before[0] + rows, before[1] + (want === 200 ? 1 : 0)];
      if (JSON.stringify(after) !== JSON.stringify(wanted)) fail(`effects ${after}, expected ${wanted}`);
    }
    return response;
  });
}, 300_000);
