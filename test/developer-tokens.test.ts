/**
 * A developer token can be replaced, by its developer or by the operator: the old one stops
 * working at once, for the operator API and for the dashboard sessions it signed in, so a leaked
 * token is not valid for good. Only the operator replaces another developer's token.
 */
import { get, request } from "node:http";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { localhostLookup, sendRequest } from "../cli/http.js";
import { dashboardSignIn } from "./helpers/dashboard.js";
import { exportZip, importZip } from "./helpers/export-import.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
});
afterAll(() => host.dispose());

const api = (path: string, token: string, method = "GET") =>
  sendRequest(`${host.url}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(method === "POST" ? { body: "{}" } : {}),
  });

const dashboardCookie = async (token: string) => (await dashboardSignIn(host, token)).cookie;

const shellStatus = async (cookie: string) =>
  (await sendRequest(`${host.url}/dashboard`, { headers: { cookie } })).status;

it("a developer replaces their token: the old one and its dashboard sessions stop working", async () => {
  const created = (await host.admin("/v1/developers", "POST", { name: "Leaky" })).json<{
    id: string;
    token: string;
  }>();
  const cookie = await dashboardCookie(created.token);
  expect(await shellStatus(cookie)).toBe(200);

  const rotated = await api("/me/token", created.token, "POST");
  expect(rotated.status).toBe(200);
  const fresh = rotated.json<{ id: string; token: string }>();
  expect(fresh.id).toBe(created.id);
  expect(fresh.token).toMatch(/^pdt_/);
  expect(fresh.token).not.toBe(created.token);

  expect((await api("/me", created.token)).json()).toEqual({
    error: { code: "forbidden", message: "That token is not valid for this host." },
  });
  expect((await api("/me", fresh.token)).json()).toMatchObject({ kind: "developer", id: created.id });
  expect(await shellStatus(cookie)).toBe(302);
  expect(await shellStatus(await dashboardCookie(fresh.token))).toBe(200);
});

it("a log stream the replaced token opened ends", async () => {
  const created = (await host.admin("/v1/developers", "POST", { name: "Follower" })).json<{
    id: string;
    token: string;
  }>();
  const code = await fixtureCode("todo");
  expect((await host.admin("/v1/deploys", "POST", { id: "followed", code, owner: created.id })).status).toBe(
    201,
  );
  const ended = new Promise<number>((resolve, reject) => {
    const req = get(
      `${host.url}/v1/deploys/followed/logs?follow=1`,
      { headers: { authorization: `Bearer ${created.token}` } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
  });
  expect((await api("/me/token", created.token, "POST")).status).toBe(200);
  // Ends within LIMITS.logFollowRecheckMs of the replacement; no time is asserted.
  expect(await ended).toBe(200);
}, 60_000);

it("of several replacements with one token at once, one answers with a working token and the others are refused", async () => {
  const created = (await host.admin("/v1/developers", "POST", { name: "Hasty" })).json<{ token: string }>();
  const answers = await Promise.all(Array.from({ length: 5 }, () => api("/me/token", created.token, "POST")));
  const issued = answers.filter((answer) => answer.status === 200);
  expect(issued).toHaveLength(1);
  for (const refused of answers.filter((answer) => answer.status !== 200))
    expect(refused.json()).toEqual({
      error: {
        code: "forbidden",
        message: expect.stringMatching(
          /^That token (is not valid for this host|was replaced by another request at the same moment; .*)\.$/,
        ),
      },
    });
  const token = (issued[0] as (typeof issued)[number]).json<{ token: string }>().token;
  expect((await api("/me", token)).status).toBe(200);
});

it("the operator replaces any developer's token; a developer cannot replace another's", async () => {
  const one = (await host.admin("/v1/developers", "POST", { name: "One" })).json<{
    id: string;
    token: string;
  }>();
  const two = (await host.admin("/v1/developers", "POST", { name: "Two" })).json<{
    id: string;
    token: string;
  }>();
  expect((await api(`/developers/${two.id}/token`, one.token, "POST")).status).toBe(403);
  expect((await api("/me", two.token)).status).toBe(200);

  const replaced = await host.admin(`/v1/developers/${two.id}/token`, "POST", {});
  expect(replaced.status).toBe(200);
  const next = replaced.json<{ id: string; token: string }>();
  expect(next.id).toBe(two.id);
  expect((await api("/me", two.token)).status).toBe(403);
  expect((await api("/me", next.token)).json()).toMatchObject({ kind: "developer", id: two.id });

  expect((await host.admin("/v1/developers/dev_nobody/token", "POST", {})).json()).toEqual({
    error: { code: "not_found", message: "No developer named dev_nobody." },
  });
  const operatorOwn = await host.admin("/v1/me/token", "POST", {});
  expect(operatorOwn.status).toBe(400);
});

it("requests the replaced token sent, waiting for their deployment's locks meanwhile, do nothing", async () => {
  // Their bodies had arrived before the replacement; they waited behind another deploy of the
  // same deployment (a long migration), and once it ended acted with the replaced token.
  const created = (await host.admin("/v1/developers", "POST", { name: "Queued" })).json<{
    id: string;
    token: string;
  }>();
  const code = await fixtureCode("access");
  expect((await host.admin("/v1/deploys/queued", "PUT", { code }, created.token)).status).toBe(201);
  expect((await host.call("queued", "mutation", "m")).status).toBe(200);
  const archive = (await exportZip(host, "queued", "", created.token)).body;
  const unclaimed = (await host.admin("/v1/deploys", "POST", { id: "queued-unclaimed", code })).json<{
    claimToken: string;
  }>();
  // Another developer's claim and change of rows: the first one's import waits in that developer's
  // turn, which a claim of theirs would wait for before the lock, and a developer's requests run
  // four at a time.
  const claimer = (await host.admin("/v1/developers", "POST", { name: "Claimer" })).json<{
    id: string;
    token: string;
  }>();
  expect((await host.admin("/v1/deploys/queued-rows", "PUT", { code }, claimer.token)).status).toBe(201);

  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  // The deployment's lock, and its write lock, which a change of rows from the dashboard waits for.
  const writes = (await host.database.deployment("queued-rows")).lock;
  const holding = [
    host.deployments.whileLocked("queued", () => released),
    host.deployments.whileLocked("queued-unclaimed", () => released),
    writes.run(() => released),
  ];
  const todo = await fixtureCode("todo");
  const waiting = [
    host.admin("/v1/deploys/queued", "PUT", { code: todo }, created.token),
    host.admin("/v1/deploys/queued", "PATCH", { restricted: true }, created.token),
    host.admin("/v1/deploys/queued", "DELETE", undefined, created.token),
    importZip(host, "queued", archive, "?replace=1", created.token),
    host.admin("/v1/deploys/queued-unclaimed/claim", "POST", unclaimed, claimer.token),
    host.admin("/v1/deploys/queued-rows/tables/visits/rows", "POST", { who: "planted" }, claimer.token),
  ];
  // Every one is past its access checks, its body in, waiting for the lock.
  await vi.waitFor(
    () => {
      expect(host.deployments.lifecycleQueue("queued")).toBe(1 + 4);
      expect(host.deployments.lifecycleQueue("queued-unclaimed")).toBe(1 + 1);
      expect(writes.userCount).toBe(1 + 1);
    },
    { timeout: 20_000 },
  );

  expect((await host.admin(`/v1/developers/${created.id}/token`, "POST")).status).toBe(200);
  expect((await host.admin(`/v1/developers/${claimer.id}/token`, "POST")).status).toBe(200);
  release();
  await Promise.all(holding);
  for (const answer of await Promise.all(waiting)) {
    expect(answer.status, answer.text()).toBe(401);
    expect(answer.json()).toMatchObject({ error: { code: "unauthorized" } });
  }
  const now = (await host.admin("/v1/deploys/queued", "GET")).json<{
    restricted: boolean;
    queries: string[];
  }>();
  expect(now.restricted).toBe(false);
  expect(now.queries).toEqual(["q"]);
  const rows = (await host.admin("/v1/deploys/queued/tables/visits/rows", "GET")).json<{
    page: Array<{ who: string }>;
  }>();
  expect(rows.page.map((row) => row.who)).toEqual(["anonymous"]);
  const planted = (await host.admin("/v1/deploys/queued-rows/tables/visits/rows", "GET")).json<{
    page: unknown[];
  }>();
  expect(planted.page).toEqual([]);
  const stillUnclaimed = (await host.admin("/v1/deploys/queued-unclaimed", "GET")).json<{ owner: unknown }>();
  expect(stillUnclaimed.owner).toBeNull();
});

/**
 * Sends `method` `path` with all of `body` but its last byte; `finish` sends that byte and resolves
 * with the answer.
 */
function heldBack(path: string, method: string, headers: Record<string, string>, body: string) {
  const bytes = Buffer.from(body);
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(`${host.url}${path}`, {
      method,
      headers: Object.assign(
        { "content-type": "application/json", "content-length": String(bytes.length) },
        headers,
      ),
      lookup: localhostLookup,
    });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.write(bytes.subarray(0, bytes.length - 1));
    finishers.push(() => req.end(bytes.subarray(bytes.length - 1)));
  });
  return { answer, sent: bytes.length - 1 };
}
const finishers: Array<() => void> = [];

/** Bytes of request bodies the host holds as they arrive (its metric). */
async function bytesArriving(): Promise<number> {
  const metrics = (await host.admin("/metrics", "GET")).text();
  return Number(/^platform_request_body_bytes_arriving (\d+)/m.exec(metrics)?.[1] ?? 0);
}

it("requests the replaced token or its dashboard session sent, whose bodies arrive after, do nothing", async () => {
  // Their headers were accepted before the replacement: a leaked token's holder could keep such
  // requests open and, once the operator had replaced the token, redeploy, change settings and
  // mint sessions with it (an attack review, 2026-12-06).
  const created = (await host.admin("/v1/developers", "POST", { name: "Held" })).json<{
    id: string;
    token: string;
  }>();
  const code = await fixtureCode("access");
  expect((await host.admin("/v1/deploys/held", "PUT", { code }, created.token)).status).toBe(201);
  const session = await dashboardSignIn(host, created.token);
  const bearer = { authorization: `Bearer ${created.token}` };
  const dashboard = {
    cookie: session.cookie,
    "x-platform-csrf": session.csrf,
    "sec-fetch-site": "same-origin",
    origin: host.url,
  };
  const held = [
    heldBack("/v1/deploys/held", "PUT", bearer, JSON.stringify({ code: await fixtureCode("todo") })),
    heldBack("/v1/deploys/held", "PATCH", bearer, JSON.stringify({ restricted: true })),
    heldBack("/v1/deploys/held/sessions", "POST", bearer, JSON.stringify({ email: "ceo@example.com" })),
    heldBack("/v1/deploys/held/tables/visits/rows", "POST", dashboard, JSON.stringify({ who: "planted" })),
  ];
  // Every one is past its access check, its body arriving.
  const sent = held.reduce((sum, { sent }) => sum + sent, 0);
  await vi.waitFor(async () => expect(await bytesArriving()).toBeGreaterThanOrEqual(sent), {
    timeout: 10_000,
  });

  expect((await host.admin(`/v1/developers/${created.id}/token`, "POST")).status).toBe(200);
  for (const finish of finishers.splice(0)) finish();
  for (const { answer } of held) {
    const { status, text } = await answer;
    expect(status, text).toBe(401);
    expect(text).toContain("was replaced or ended while the request waited; nothing was done");
  }
  const now = (await host.admin("/v1/deploys/held", "GET")).json<{
    restricted: boolean;
    queries: string[];
  }>();
  expect(now.restricted).toBe(false);
  // Still the access fixture's code, not the todo bundle the held deploy carried.
  expect(now.queries).toEqual(["q"]);
  const rows = (await host.admin("/v1/deploys/held/tables/visits/rows", "GET")).json<{ page: unknown[] }>();
  expect(rows.page).toEqual([]);
});
