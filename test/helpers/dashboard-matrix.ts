import { expect } from "vitest";
import { type HttpResponse, sendRequest } from "../../cli/http.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { type DashboardSession, dashboardSignIn, sessionRequest } from "./dashboard.js";
import { fixtureCode, startTestHost, type TestHost } from "./host.js";

/** The deployment states of the dashboard's access matrices: one with an owner, one without. */
export const MATRIX_STATES = ["claimed", "unclaimed"] as const;
export type MatrixState = (typeof MATRIX_STATES)[number];

/** Every caller a matrix tries, with a bearer token or as a dashboard session. */
export const MATRIX_CALLERS = [
  "operator",
  "owner developer",
  "other developer",
  "claim token",
  "account",
  "guest",
  "anonymous",
  "operator session",
  "owner session",
  "owner session without CSRF",
  "owner session from the app's page",
] as const;
export type MatrixCaller = (typeof MATRIX_CALLERS)[number];

/** A host with the `dashboard` fixture deployed as `claimed` (owned) and `unclaimed`, and a credential of each caller. */
export interface DashboardMatrix {
  host: TestHost;
  /** The fixture's bundle, for deployments a matrix makes of its own. */
  code: string;
  ownerId: string;
  /** `owner`, `other`, `claim`, and per state `<state>/guest` and `<state>/account`. */
  tokens: Map<string, string>;
  ownerSession: DashboardSession;
  operatorSession: DashboardSession;
}

/** Starts the host every dashboard access matrix runs against (dispose it with `host.dispose()`). */
export async function startDashboardMatrix(): Promise<DashboardMatrix> {
  // Its callers present refused tokens (claim, app and guest tokens) hundreds of times from one
  // address: the matrix is about who may do what, not how many tries an address gets, which
  // test/dashboard-sign-ins.test.ts checks.
  (LIMITS as { dashboardSignInsPerMinute: number }).dashboardSignInsPerMinute = 1_000_000;
  const host = await startTestHost();
  const tokens = new Map<string, string>();
  const owner = (await host.admin("/v1/developers", "POST", { name: "owner" })).json<{
    id: string;
    token: string;
  }>();
  const other = (await host.admin("/v1/developers", "POST", { name: "other" })).json<{ token: string }>();
  tokens.set("owner", owner.token);
  tokens.set("other", other.token);
  const code = await fixtureCode("dashboard");
  expect((await host.admin("/v1/deploys", "POST", { id: "claimed", code, owner: owner.id })).status).toBe(
    201,
  );
  const unclaimed = await host.admin("/v1/deploys", "POST", { id: "unclaimed", code });
  tokens.set("claim", unclaimed.json<{ claimToken: string }>().claimToken);
  for (const state of MATRIX_STATES) {
    const guest = await sendRequest(`${host.deploymentUrl(state)}/__platform/auth/guest`, { method: "POST" });
    tokens.set(`${state}/guest`, guest.json<{ token: string }>().token);
    const account = await host.admin(`/v1/deploys/${state}/sessions`, "POST", {
      email: "member@example.com",
    });
    tokens.set(`${state}/account`, account.json<{ token: string }>().token);
  }
  return {
    host,
    code,
    ownerId: owner.id,
    tokens,
    ownerSession: await dashboardSignIn(host, owner.token),
    operatorSession: await dashboardSignIn(host, host.adminToken),
  };
}

/** Sends one cell's request as `who`, to a route of deployment `state`. */
export function sendAs(
  matrix: DashboardMatrix,
  who: MatrixCaller,
  state: MatrixState,
  method: string,
  path: string,
  body: unknown,
): Promise<HttpResponse> {
  const { host, tokens, ownerSession, operatorSession } = matrix;
  if (who === "owner session" || who === "operator session")
    return sessionRequest(host, who === "owner session" ? ownerSession : operatorSession, path, method, body);
  if (who === "owner session without CSRF")
    return sessionRequest(host, ownerSession, path, method, body, { "x-platform-csrf": "" });
  if (who === "owner session from the app's page")
    return sessionRequest(host, ownerSession, path, method, body, {
      "sec-fetch-site": "same-site",
      origin: host.deploymentUrl(state),
    });
  const token = {
    operator: host.adminToken,
    "owner developer": tokens.get("owner"),
    "other developer": tokens.get("other"),
    "claim token": tokens.get("claim"),
    account: tokens.get(`${state}/account`),
    guest: tokens.get(`${state}/guest`),
    anonymous: undefined,
  }[who];
  return sendRequest(`${host.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** What a cell expects: the success status, or [status, code]. */
export type CellOutcome = number | [number, string];

/** A cell's outcome as the matrices state what they expect: the success status, or [status, code]. */
function outcomeOf(response: HttpResponse): number | [number, string | undefined] {
  return response.status < 300
    ? response.status
    : [response.status, response.json<{ error?: { code: string } }>().error?.code];
}

/**
 * Tries every cell of {caller} x {deployment state} x `routes`: `send` makes the cell's request
 * (and may report more of what the cell did wrong through `fail`), and its answer must be the
 * cell's `expected` outcome exactly. Fails with every cell that did not, after trying them all.
 */
export async function expectEveryCell<Route extends string>(
  routes: readonly Route[],
  expected: (who: MatrixCaller, state: MatrixState, route: Route) => CellOutcome,
  send: (
    who: MatrixCaller,
    state: MatrixState,
    route: Route,
    want: CellOutcome,
    fail: (problem: string) => void,
  ) => Promise<HttpResponse>,
): Promise<void> {
  const failures: string[] = [];
  let cells = 0;
  for (const who of MATRIX_CALLERS) {
    for (const state of MATRIX_STATES) {
      for (const route of routes) {
        cells++;
        const want = expected(who, state, route);
        const fail = (problem: string) => failures.push(`${who} / ${state} / ${route}: ${problem}`);
        const response = await send(who, state, route, want, fail);
        const got = outcomeOf(response);
        if (JSON.stringify(got) !== JSON.stringify(want))
          fail(`expected ${JSON.stringify(want)}, got ${JSON.stringify(got)} ${response.text()}`);
      }
    }
  }
  expect(failures).toEqual([]);
  expect(cells).toBe(MATRIX_CALLERS.length * MATRIX_STATES.length * routes.length);
}
