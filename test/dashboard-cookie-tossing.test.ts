/**
 * Cookie tossing: a tenant's page at `<id>.<domain>` can set a cookie for the whole domain
 * (`document.cookie = "platform_session=...; Domain=<domain>; Path=/dashboard"`), which the browser
 * then sends to the control plane before the visitor's own. Such a request is signed in as no one,
 * with a message that says what to do, never as the session that came first; over HTTPS the
 * session cookie is `__Host-` prefixed, which no other host can set, and a plain one is ignored.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { TWO_SESSION_COOKIES } from "../host/http/principal.js";
import { postSignIn } from "./helpers/dashboard.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let proxied: TestHost;
let attackerToken: string;
let proxiedAttackerToken: string;

beforeAll(async () => {
  host = await startTestHost();
  proxied = await startTestHost({ trustProxy: true });
  attackerToken = (await host.admin("/v1/developers", "POST", { name: "Mallory" })).json<{ token: string }>()
    .token;
  proxiedAttackerToken = (await proxied.admin("/v1/developers", "POST", { name: "Mallory" })).json<{
    token: string;
  }>().token;
});
afterAll(async () => {
  await host.dispose();
  await proxied.dispose();
});

const signIn = postSignIn;

async function csrfOf(target: TestHost, cookie: string, headers: Record<string, string> = {}) {
  const shell = await sendRequest(`${target.url}/dashboard`, { headers: { cookie, ...headers } });
  return /data-csrf="([^"]+)"/.exec(shell.text())?.[1] as string;
}

it("a planted session cookie sent before the visitor's signs in no one, and the pages say why", async () => {
  const victim = await signIn(host, host.adminToken);
  const attacker = await signIn(host, attackerToken);
  const attackerCsrf = await csrfOf(host, attacker.pair);
  // The more specific path of the planted cookie puts it first.
  const both = `${attacker.pair}; ${victim.pair}`;

  const me = await sendRequest(`${host.url}/v1/me`, {
    headers: { cookie: both, "x-platform-csrf": attackerCsrf, "sec-fetch-site": "same-origin" },
  });
  expect(me.status).toBe(401);
  expect(me.json()).toEqual({ error: { code: "unauthorized", message: TWO_SESSION_COOKIES } });

  const shell = await sendRequest(`${host.url}/dashboard`, { headers: { cookie: both } });
  expect(shell.status).toBe(302);
  expect(shell.headers.location).toBe("/dashboard/login?next=%2Fdashboard");
  const login = await sendRequest(`${host.url}/dashboard/login`, { headers: { cookie: both } });
  expect(login.status).toBe(200);
  expect(login.text()).toContain("Your browser sent two dashboard session cookies");
  expect(login.text()).not.toContain("Mallory");

  // Signing in again cannot help while the planted cookie is there: no new session is made.
  const again = await signIn(host, host.adminToken, { cookie: both });
  expect(again.response.status).toBe(302);
  expect(again.response.headers.location).toBe("/dashboard/login?next=%2Fdashboard");
  expect(again.cookie).toBeUndefined();

  // Each cookie alone still works as before.
  const alone = await sendRequest(`${host.url}/dashboard`, { headers: { cookie: victim.pair } });
  expect(alone.text()).toContain('data-operator="1"');
});

it("over HTTPS the session cookie is __Host- prefixed, and a plain platform_session beside it is ignored", async () => {
  const https = { "x-forwarded-proto": "https" };
  const victim = await signIn(proxied, proxied.adminToken, https);
  expect(victim.cookie).toMatch(/^__Host-platform_session=[A-Za-z0-9_-]{43}; path=\/; /);
  expect(victim.cookie).toMatch(/; secure/i);
  expect(victim.cookie).not.toMatch(/; domain=/i);
  const attacker = await signIn(proxied, proxiedAttackerToken);
  expect(attacker.cookie).toMatch(/^platform_session=/);

  const shell = await sendRequest(`${proxied.url}/dashboard`, {
    headers: { cookie: `${attacker.pair}; ${victim.pair}`, ...https },
  });
  expect(shell.status).toBe(200);
  expect(shell.text()).toContain('data-operator="1"');
  // A planted plain cookie alone signs in no one over HTTPS.
  const plantedOnly = await sendRequest(`${proxied.url}/dashboard`, {
    headers: { cookie: attacker.pair, ...https },
  });
  expect(plantedOnly.status).toBe(302);
});
