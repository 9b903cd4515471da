/**
 * The dashboard takes the operator token too, over plain HTTP against a real host: the operator
 * sees every deployment (a developer's, an unclaimed one; the app shell lists them through the
 * operator API with the session's CSRF token) and may open and delete any one's files;
 * a developer sees only their own. Sign-in keeps the form-origin rule and the session cookie's
 * attributes (Secure only over HTTPS as a trusted proxy reports it), and an operator session ends
 * when the host's operator token changes.
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { hashSecret } from "../host/auth/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { postSignIn } from "./helpers/dashboard.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let developerToken: string;

beforeAll(async () => {
  host = await startTestHost();
  const developer = (await host.admin("/v1/developers", "POST", { name: "Dana" })).json<{
    id: string;
    token: string;
  }>();
  developerToken = developer.token;
  const code = await fixtureCode("todo");
  expect((await host.admin("/v1/deploys", "POST", { id: "danas", code, owner: developer.id })).status).toBe(
    201,
  );
  expect((await host.admin("/v1/deploys", "POST", { id: "nobodys", code })).status).toBe(201);
});
afterAll(() => host.dispose());

/** Signs in with `token` as a same-origin form post would; the session cookie, or undefined. */
const signIn = postSignIn;

function page(path: string, cookie: string | undefined, target: TestHost = host) {
  return sendRequest(`${target.url}${path}`, { headers: cookie ? { cookie } : {} });
}

it("signs the operator in and lists every deployment; a developer sees only their own", async () => {
  const operator = await signIn(host, host.adminToken);
  expect(operator.response.status).toBe(302);
  expect(operator.response.headers.location).toBe("/dashboard");
  expect(operator.cookie).toMatch(/^platform_session=[A-Za-z0-9_-]{43}; /);
  expect(operator.cookie).toMatch(/; samesite=strict/i);
  expect(operator.cookie).toMatch(/; httponly/i);
  const shell = await page("/dashboard", operator.pair);
  expect(shell.status).toBe(200);
  expect(shell.text()).toContain('data-operator="1"');
  expect(shell.headers["content-security-policy"]).toMatch(/script-src 'self'/);
  expect(shell.headers["cache-control"]).toBe("no-store");
  const operatorCsrf = /data-csrf="([^"]+)"/.exec(shell.text())?.[1] as string;
  const list = (pair: string | undefined, csrf: string) =>
    sendRequest(`${host.url}/v1/deploys`, {
      headers: { cookie: pair as string, "x-platform-csrf": csrf, "sec-fetch-site": "same-origin" },
    });
  const all = (await list(operator.pair, operatorCsrf)).json<{ deploys: Array<{ id: string }> }>();
  expect(all.deploys.map((d) => d.id).sort()).toEqual(["danas", "nobodys"]);
  expect((await page("/deploys/nobodys/storage", operator.pair)).status).toBe(200);

  const developer = await signIn(host, developerToken);
  const developerShell = await page("/dashboard", developer.pair);
  expect(developerShell.text()).toContain('data-name="Dana"');
  const developerCsrf = /data-csrf="([^"]+)"/.exec(developerShell.text())?.[1] as string;
  const own = (await list(developer.pair, developerCsrf)).json<{ deploys: Array<{ id: string }> }>();
  expect(own.deploys.map((d) => d.id)).toEqual(["danas"]);
  // Each session's CSRF token is its own.
  expect((await list(developer.pair, operatorCsrf)).status).toBe(403);
  const notTheirs = await page("/deploys/nobodys/storage", developer.pair);
  expect(notTheirs.status).toBe(404);
  // Its error page carries every page's headers too: no framing, no caching, no script.
  expect(notTheirs.headers["x-frame-options"]).toBe("DENY");
  expect(notTheirs.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
  expect(notTheirs.headers["cache-control"]).toContain("no-store");

  const signedOut = await page("/dashboard", undefined);
  expect(signedOut.status).toBe(302);
  expect(signedOut.headers.location).toBe("/dashboard/login?next=%2Fdashboard");
  // A long path is not carried to sign-in: percent-encoded into Location, 6,000 slashes made a
  // head of 18 KB, which nginx refuses (502), taking the host out of its upstream for 10 s (found
  // by review). The head stays well under the 4 KiB a proxy's buffer takes by default.
  const long = await page(`/dashboard?x=${"/".repeat(6_000)}`, undefined);
  expect(long.status).toBe(302);
  expect(long.headers.location).toBe("/dashboard/login?next=%2Fdashboard");
  const kept = `/dashboard?x=${"a".repeat(LIMITS.redirectPathChars - 13)}`;
  expect((await page(kept, undefined)).headers.location).toBe(
    `/dashboard/login?next=${encodeURIComponent(kept)}`,
  );
  const storage = await page(`/deploys/${"a".repeat(2_000)}/storage`, undefined);
  expect(storage.headers.location).toBe("/dashboard/login?next=%2Fdashboard");
});

it("refuses the operator's sign-in from another origin, and wrong tokens", async () => {
  for (const headers of [
    { "sec-fetch-site": "same-site", origin: host.deploymentUrl("danas") },
    { "sec-fetch-site": "cross-site", origin: "http://evil.example" },
  ]) {
    const refused = await signIn(host, host.adminToken, headers);
    expect(refused.response.status).toBe(403);
    expect(refused.cookie).toBeUndefined();
  }
  const wrong = await signIn(host, `${host.adminToken}x`);
  expect(wrong.response.headers.location).toMatch(/^\/dashboard\/login\?failed=1/);
  expect(wrong.cookie).toBeUndefined();
  expect((await signIn(host, "")).cookie).toBeUndefined();
});

it("lets the operator delete any deployment's file, with the session's CSRF token only", async () => {
  const account = (await host.admin("/v1/deploys/danas/sessions", "POST", { email: "u@example.com" })).json<{
    token: string;
  }>();
  const uploaded = await sendRequest(`${host.deploymentUrl("danas")}/storage?public=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${account.token}`, "content-type": "text/plain" },
    body: "hello operator",
  });
  expect(uploaded.status, uploaded.text()).toBe(201);
  const key = uploaded.json<{ key: string }>().key;
  const operator = await signIn(host, host.adminToken);
  const storage = await page("/deploys/danas/storage", operator.pair);
  expect(storage.text()).toContain(key);
  // The page with the CSRF token beside a tenant's text is never compressed (BREACH).
  const asked = await sendRequest(`${host.url}/deploys/danas/storage`, {
    headers: { cookie: operator.pair as string, "accept-encoding": "gzip, br" },
  });
  expect([asked.status, asked.headers["content-encoding"], asked.text().length > 1024]).toEqual([
    200,
    undefined,
    true,
  ]);
  const csrf = /name="csrf" value="([^"]+)"/.exec(storage.text())?.[1] as string;
  const remove = (token: string) =>
    sendRequest(`${host.url}/deploys/danas/storage/delete`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "sec-fetch-site": "same-origin",
        origin: host.url,
        cookie: operator.pair as string,
      },
      body: `key=${encodeURIComponent(key)}&csrf=${encodeURIComponent(token)}`,
    });
  expect((await remove("forged")).status).toBe(403);
  expect((await page("/deploys/danas/storage", operator.pair)).text()).toContain(key);
  expect((await remove(csrf)).status).toBe(302);
  expect((await page("/deploys/danas/storage", operator.pair)).text()).toContain("No files yet.");
});

it("keeps sessions under a hash of their id, in a data folder only its user may open", async () => {
  const dir = join(await mkdtemp(join(tmpdir(), "platform-dashboard-data-")), "data");
  try {
    const fresh = await startTestHost({ data: dir });
    try {
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      const session = await signIn(fresh, fresh.adminToken);
      const id = (session.pair as string).split("=")[1] as string;
      const stored = fresh.deployments.db.records("dashboard-sessions");
      expect(await stored.get(id)).toBeUndefined();
      expect(await stored.get(hashSecret(id))).toMatchObject({ csrf: expect.any(String) });
      expect((await page("/dashboard", session.pair, fresh)).status).toBe(200);
    } finally {
      await fresh.close();
    }
  } finally {
    await rm(dirname(dir), { recursive: true, force: true });
  }
});

it("ends operator sessions when the host's operator token changes", async () => {
  const dir = await mkdtemp(join(tmpdir(), "platform-dashboard-token-"));
  try {
    const first = await startTestHost({ data: dir, adminToken: "first-operator-token" });
    const session = await signIn(first, "first-operator-token");
    expect(
      (await sendRequest(`${first.url}/dashboard`, { headers: { cookie: session.pair as string } })).status,
    ).toBe(200);
    await first.close();
    const second = await startTestHost({ data: dir, adminToken: "second-operator-token" });
    try {
      const after = await sendRequest(`${second.url}/dashboard`, {
        headers: { cookie: session.pair as string },
      });
      expect(after.status).toBe(302);
      expect(after.headers.location).toMatch(/^\/dashboard\/login/);
    } finally {
      await second.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

it("marks the session cookie Secure only when the trusted proxy says the client came over HTTPS", async () => {
  const secure = (cookie: string | undefined) => /;\s*secure(;|$)/i.test(cookie ?? "");
  // Without --trust-proxy the header is the client's word: a plain-HTTP host keeps a cookie its
  // clients can send back.
  const untrusted = await signIn(host, host.adminToken, { "x-forwarded-proto": "https" });
  expect(untrusted.response.status).toBe(302);
  expect(secure(untrusted.cookie)).toBe(false);

  const proxied = await startTestHost({ trustProxy: true });
  try {
    const overTls = await signIn(proxied, proxied.adminToken, { "x-forwarded-proto": "https" });
    expect(overTls.cookie).toMatch(/^__Host-platform_session=[A-Za-z0-9_-]{43}; /);
    expect(secure(overTls.cookie)).toBe(true);
    expect(overTls.cookie).toMatch(/; httponly/i);
    expect(overTls.cookie).toMatch(/; samesite=strict/i);
    // The proxy wrote the last entry: a client's own "https" before the proxy's "http" is not believed.
    const forged = await signIn(proxied, proxied.adminToken, { "x-forwarded-proto": "https, http" });
    expect(forged.response.status).toBe(302);
    expect(secure(forged.cookie)).toBe(false);
    expect(
      secure((await signIn(proxied, proxied.adminToken, { "x-forwarded-proto": "http, HTTPS" })).cookie),
    ).toBe(true);
    const plain = await signIn(proxied, proxied.adminToken);
    expect(secure(plain.cookie)).toBe(false);
    expect(
      (await sendRequest(`${proxied.url}/dashboard`, { headers: { cookie: plain.pair as string } })).status,
    ).toBe(200);

    // The session works as any other, and signing out over HTTPS clears it with the same attributes.
    const shell = await sendRequest(`${proxied.url}/dashboard`, {
      headers: { cookie: overTls.pair as string, "x-forwarded-proto": "https" },
    });
    expect(shell.status).toBe(200);
    const csrf = /data-csrf="([^"]+)"/.exec(shell.text())?.[1] as string;
    const signedOut = await sendRequest(`${proxied.url}/dashboard/logout`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "sec-fetch-site": "same-origin",
        origin: proxied.url,
        "x-forwarded-proto": "https",
        cookie: overTls.pair as string,
      },
      body: `csrf=${encodeURIComponent(csrf)}`,
    });
    expect(signedOut.status).toBe(302);
    const cleared = [signedOut.headers["set-cookie"] ?? []].flat()[0];
    expect(cleared).toMatch(/^__Host-platform_session=;/);
    expect(secure(cleared)).toBe(true);
    expect(
      (await sendRequest(`${proxied.url}/dashboard`, { headers: { cookie: overTls.pair as string } })).status,
    ).toBe(302);
  } finally {
    await proxied.close();
  }
});
