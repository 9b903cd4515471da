import { expect } from "vitest";
import { type HttpResponse, sendRequest } from "../../cli/http.js";
import { fixtureCode, type TestHost } from "./host.js";

/** A signed-in dashboard session as a browser holds it: the cookie, and the CSRF token its pages carry. */
export interface DashboardSession {
  cookie: string;
  csrf: string;
}

/**
 * Posts the dashboard's sign-in form to `target` with `token` (and `headers` over the browser's
 * same-origin ones), whatever the answer: the response, the session cookie set (if any) and its
 * `name=value` pair.
 */
export async function postSignIn(target: TestHost, token: string, headers: Record<string, string> = {}) {
  const response = await sendRequest(`${target.url}/dashboard/login`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      origin: target.url,
      ...headers,
    },
    body: `token=${encodeURIComponent(token)}&next=%2Fdashboard`,
  });
  const cookie = [response.headers["set-cookie"] ?? []].flat()[0];
  return { response, cookie, pair: cookie?.split(";")[0] as string };
}

/** Signs in to `host`'s dashboard with `token` as its own sign-in form would. */
export async function dashboardSignIn(host: TestHost, token: string): Promise<DashboardSession> {
  const response = await sendRequest(`${host.url}/dashboard/login`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      origin: host.url,
    },
    body: `token=${encodeURIComponent(token)}&next=%2Fdashboard`,
  });
  expect(response.status).toBe(302);
  const cookie = ([response.headers["set-cookie"] ?? []].flat()[0] ?? "").split(";")[0] as string;
  const shell = await sendRequest(`${host.url}/dashboard`, { headers: { cookie } });
  expect(shell.status).toBe(200);
  const csrf = /data-csrf="([^"]+)"/.exec(shell.text())?.[1];
  expect(csrf).toBeDefined();
  return { cookie, csrf: csrf as string };
}

/**
 * An operator-API request as the dashboard's script sends it: the session cookie, its CSRF header
 * and the browser's same-origin headers, unless `headers` replaces them.
 */
export function sessionRequest(
  host: TestHost,
  session: DashboardSession,
  path: string,
  method = "GET",
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return sendRequest(`${host.url}${path}`, {
    method,
    headers: {
      cookie: session.cookie,
      "x-platform-csrf": session.csrf,
      "sec-fetch-site": "same-origin",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/**
 * Makes a developer named Dana and deploys fixture `fixture` as `id`, owned by her: what a
 * dashboard test signs in to look at. Answers her id and token.
 */
export async function danasDeployment(
  host: TestHost,
  fixture: string,
  id: string,
): Promise<{ id: string; token: string }> {
  const developer = (await host.admin("/v1/developers", "POST", { name: "Dana" })).json<{
    id: string;
    token: string;
  }>();
  const code = await fixtureCode(fixture);
  expect((await host.admin("/v1/deploys", "POST", { id, code, owner: developer.id })).status).toBe(201);
  return developer;
}
