/**
 * The dashboard's function runner and per-handler figures through the operator API: a run is a
 * real call of that deployment (the same access policy, validation, budgets and call log) as an
 * identity of that deployment only, answered with its value or its error and its usage; it is
 * logged as the developer's action; an account must exist there; and a deleted deployment's log
 * and figures are not shown to a new deployment of the same id.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { RunAnswer, StatsAnswer } from "../sdk/protocol/index.js";
import { type DashboardSession, dashboardSignIn, sessionRequest } from "./helpers/dashboard.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let session: DashboardSession;
let ownerId: string;
let code: string;

beforeAll(async () => {
  host = await startTestHost();
  const owner = (await host.admin("/v1/developers", "POST", { name: "owner" })).json<{
    id: string;
    token: string;
  }>();
  ownerId = owner.id;
  code = await fixtureCode("dashboard");
  for (const id of ["chat", "elsewhere"])
    expect((await host.admin("/v1/deploys", "POST", { id, code, owner: owner.id })).status).toBe(201);
  session = await dashboardSignIn(host, owner.token);
});
afterAll(() => host.dispose());

function run(body: unknown, deployment = "chat") {
  return sessionRequest(host, session, `/v1/deploys/${deployment}/run`, "POST", body);
}

async function ran(body: unknown, deployment = "chat"): Promise<RunAnswer> {
  const response = await run(body, deployment);
  expect(response.status, response.text()).toBe(200);
  return response.json<RunAnswer>();
}

it("runs a mutation and a query as a guest, with their value and usage against the limits", async () => {
  const posted = await ran({
    kind: "mutation",
    name: "post",
    args: { channel: "general", body: "hello" },
    as: { kind: "guest", name: "tester" },
  });
  expect(posted.outcome).toBe("ok");
  expect(posted.identity).toEqual({ kind: "guest", userId: "guest:tester" });
  expect(posted.usage?.writes).toBeGreaterThanOrEqual(2);
  expect(posted.limits).toEqual({
    rowsReturned: 1000,
    rowsRead: 5000,
    bytesRead: 4 * 1024 * 1024,
    rangesRead: 4096,
    cpuMs: 1000,
    wallMs: 15_000,
  });
  const mine = await ran({ kind: "query", name: "mine", as: { kind: "guest", name: "tester" } });
  expect(mine.outcome).toBe("ok");
  // Its index scan counts against rangesRead, shown with its limit.
  expect(mine.usage?.rangesRead).toBe(mine.usage?.indexScans);
  expect(mine.usage?.indexScans).toBeGreaterThanOrEqual(1);
  expect((mine.value as Array<{ body: string; author: string }>).map((m) => [m.body, m.author])).toEqual([
    ["hello", "guest:tester"],
  ]);
  expect(mine.usage?.rowsReturned).toBe(1);
  expect(mine.usage?.writes).toBe(0);
  // Another guest sees nothing of it: the identity is the handler's, not the developer's.
  const other = await ran({ kind: "query", name: "mine", as: { kind: "guest" } });
  expect(other.value).toEqual([]);
  expect(other.identity.userId).toBe("guest:dashboard");
});

it("answers a failing handler with its code, message and usage, as a real call gets them", async () => {
  const empty = await ran({
    kind: "mutation",
    name: "post",
    args: { channel: "general", body: " " },
    as: { kind: "guest" },
  });
  expect(empty).toMatchObject({
    outcome: "error",
    error: { code: "bad_request", message: "A message needs a body." },
  });
  expect(empty.usage?.cpuMs).toBeGreaterThanOrEqual(0);
  const anonymous = await ran({ kind: "query", name: "mine", as: { kind: "anonymous" } });
  const real = await host.call("chat", "query", "mine");
  expect(anonymous.error).toEqual(real.json<{ error: unknown }>().error);
  expect(anonymous.error?.code).toBe("unauthorized");
  // The same access policy: a restricted app refuses a guest before the handler runs.
  expect((await host.admin("/v1/deploys/elsewhere", "PATCH", { restricted: true })).status).toBe(200);
  const refused = await ran({ kind: "query", name: "latest", as: { kind: "guest" } }, "elsewhere");
  expect(refused.outcome).toBe("error");
  expect(refused.error?.code).toBe("forbidden");
  expect(refused.usage).toBeNull();
  expect((await host.admin("/v1/deploys/elsewhere", "PATCH", { restricted: false })).status).toBe(200);
});

it("acts only as accounts that exist in that deployment", async () => {
  const signedIn = await host.admin("/v1/deploys/chat/sessions", "POST", { email: "Ada@Example.com" });
  const userId = signedIn.json<{ userId: string }>().userId;
  const asAda = await ran({ kind: "query", name: "mine", as: { kind: "account", email: "ada@example.com" } });
  expect(asAda.outcome).toBe("ok");
  expect(asAda.identity).toEqual({ kind: "account", userId, email: "ada@example.com" });
  // An account of another deployment is nobody here.
  await host.admin("/v1/deploys/elsewhere/sessions", "POST", { email: "bob@example.com" });
  const bob = await run({ kind: "query", name: "mine", as: { kind: "account", email: "bob@example.com" } });
  expect(bob.status).toBe(404);
  expect(bob.json()).toMatchObject({ error: { code: "not_found" } });
  const cases: Array<[unknown, number, string]> = [
    [{ kind: "query", name: "mine", as: { kind: "account", email: "nobody@example.com" } }, 404, "not_found"],
    [{ kind: "query", name: "mine", as: { kind: "account", email: "not an email" } }, 400, "bad_request"],
    [{ kind: "query", name: "mine", as: { kind: "guest", name: "Bad Name" } }, 400, "bad_request"],
    [{ kind: "query", name: "mine", as: { kind: "developer" } }, 400, "bad_request"],
    [{ kind: "query", name: "mine" }, 400, "bad_request"],
    [{ kind: "query", name: "nope", as: { kind: "guest" } }, 404, "not_found"],
    [{ kind: "query", name: "post", as: { kind: "guest" } }, 404, "not_found"],
    [{ kind: "endpoint", name: "mine", as: { kind: "guest" } }, 400, "bad_request"],
  ];
  for (const [body, status, code] of cases) {
    const response = await run(body);
    expect(
      [response.status, response.json<{ error: { code: string } }>().error.code],
      JSON.stringify(body),
    ).toEqual([status, code]);
  }
});

it("logs each run as the developer's action, without its arguments", async () => {
  await ran({
    kind: "mutation",
    name: "post",
    args: { channel: "x", body: "secret words" },
    as: { kind: "guest" },
  });
  const lines = (await host.admin("/v1/deploys/chat/logs", "GET")).text().trim().split("\n");
  const runs = lines.map((line) => JSON.parse(line)).filter((line) => line.handler === "dashboard");
  expect(runs.at(-1)).toMatchObject({
    level: "info",
    message: `dashboard: developer ${ownerId} ran mutation post as guest guest:dashboard`,
    fields: {
      by: `developer ${ownerId}`,
      action: "run",
      kind: "mutation",
      name: "post",
      as: "guest guest:dashboard",
    },
  });
  expect(JSON.stringify(runs)).not.toContain("secret words");
  // The call itself follows, as any call's line.
  expect(lines.some((line) => line.includes('"message":"mutation post ok"'))).toBe(true);
});

it("counts each handler's calls, failures and wall time over the last hour, per deployment", async () => {
  const stats = (await sessionRequest(host, session, "/v1/deploys/chat/stats")).json<StatsAnswer>();
  const post = stats.handlers.find((h) => h.handler === "post");
  expect(post).toMatchObject({ kind: "mutation", calls: 3, failures: 1 });
  expect(post?.p99Ms).toBeGreaterThanOrEqual(post?.p50Ms ?? 0);
  expect(post?.maxShare).toBeGreaterThan(0);
  expect(post?.minutes.reduce((sum, m) => sum + m.calls, 0)).toBe(3);
  const elsewhere = (await sessionRequest(host, session, "/v1/deploys/elsewhere/stats")).json<StatsAnswer>();
  // Its one run was refused before the handler ran: nothing ran there.
  expect(elsewhere.handlers).toEqual([]);
});

it("shows a new deployment of a deleted one's id nothing of the old log or figures", async () => {
  expect((await host.admin("/v1/deploys", "POST", { id: "reused", code, owner: ownerId })).status).toBe(201);
  await ran({ kind: "query", name: "latest", as: { kind: "guest" } }, "reused");
  expect((await host.admin("/v1/deploys/reused", "DELETE")).status).toBe(204);
  expect((await host.admin("/v1/deploys", "POST", { id: "reused", code })).status).toBe(201);
  expect((await host.admin("/v1/deploys/reused/logs", "GET")).text()).toBe("");
  expect((await host.admin("/v1/deploys/reused/stats", "GET")).json<StatsAnswer>().handlers).toEqual([]);
});
