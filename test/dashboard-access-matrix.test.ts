/**
 * The access matrix of the dashboard's data routes (`/v1/deploys/<id>/totals`, `/tables`, rows):
 * every caller x deployment state x route, each cell asserting the exact status and error code, in
 * the style of access-matrix.test.ts. Callers present their credential as a bearer token, or as a
 * dashboard session (cookie, CSRF header, same-origin request).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { type DashboardSession, dashboardSignIn, sessionRequest } from "./helpers/dashboard.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

const STATES = ["claimed", "unclaimed"] as const;
const ROUTES = ["totals", "tables", "rows", "row", "insert", "edit", "delete"] as const;
const WHO = [
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
] as const;
type State = (typeof STATES)[number];
type RouteName = (typeof ROUTES)[number];
type Who = (typeof WHO)[number];

let host: TestHost;
const tokens = new Map<string, string>();
let ownerSession: DashboardSession;
let operatorSession: DashboardSession;
let channel: Record<State, string>;

beforeAll(async () => {
  host = await startTestHost();
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
  channel = { claimed: "", unclaimed: "" };
  for (const state of STATES) {
    const seeded = await host.call(state, "mutation", "seed", { channels: ["general"], perChannel: 3 });
    channel[state] = seeded.json<{ value: string[] }>().value[0] as string;
    const guest = await sendRequest(`${host.deploymentUrl(state)}/__platform/auth/guest`, { method: "POST" });
    tokens.set(`${state}/guest`, guest.json<{ token: string }>().token);
    const account = await host.admin(`/v1/deploys/${state}/sessions`, "POST", {
      email: "member@example.com",
    });
    tokens.set(`${state}/account`, account.json<{ token: string }>().token);
  }
  ownerSession = await dashboardSignIn(host, owner.token);
  operatorSession = await dashboardSignIn(host, host.adminToken);
});
afterAll(() => host.dispose());

/** A fresh message of `state`'s deployment, made by someone allowed to, for edits and deletes. */
async function freshRow(state: State): Promise<string> {
  const creator = state === "claimed" ? tokens.get("owner") : host.adminToken;
  const made = await host.admin(
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
  if (who === "owner session" || who === "operator session")
    return sessionRequest(host, who === "owner session" ? ownerSession : operatorSession, path, method, body);
  if (who === "owner session without CSRF")
    return sessionRequest(host, ownerSession, path, method, body, { "x-platform-csrf": "" });
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

const WRITES: RouteName[] = ["insert", "edit", "delete"];

/** The expected outcome of one cell: the success status, or [status, code]. */
function expected(who: Who, state: State, route: RouteName): number | [number, string] {
  const success = route === "insert" ? 201 : route === "delete" ? 204 : 200;
  if (who === "anonymous") return [401, "unauthorized"];
  if (["claim token", "account", "guest"].includes(who)) return [403, "forbidden"];
  if (who === "other developer" || who === "owner session without CSRF") return [403, "forbidden"];
  const operator = who === "operator" || who === "operator session";
  if (operator) return WRITES.includes(route) && state === "claimed" ? [403, "forbidden"] : success;
  // The owner developer (token or session): theirs is the claimed one; the unclaimed one is nobody's.
  return state === "claimed" ? success : [403, "forbidden"];
}

it("answers every cell of {caller} x {deployment state} x {data route} exactly", async () => {
  const failures: string[] = [];
  let cells = 0;
  for (const who of WHO) {
    for (const state of STATES) {
      for (const route of ROUTES) {
        cells++;
        const want = expected(who, state, route);
        const response = await attempt(who, state, route);
        const got =
          response.status < 300
            ? response.status
            : [response.status, response.json<{ error?: { code: string } }>().error?.code];
        if (JSON.stringify(got) !== JSON.stringify(want))
          failures.push(
            `${who} / ${state} / ${route}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)} ${response.text()}`,
          );
      }
    }
  }
  expect(failures).toEqual([]);
  expect(cells).toBe(WHO.length * STATES.length * ROUTES.length);
}, 120_000);
