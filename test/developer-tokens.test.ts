/**
 * A developer token can be replaced, by its developer or by the operator: the old one stops
 * working at once, for the operator API and for the dashboard sessions it signed in, so a leaked
 * token is not valid for good. Only the operator replaces another developer's token.
 */
import { get } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { dashboardSignIn } from "./helpers/dashboard.js";
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
