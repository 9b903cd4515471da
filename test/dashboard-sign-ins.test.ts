/**
 * Dashboard sign-ins are bounded: each stores a session, and a wrong token may be a guess at the
 * operator's. One client address gets LIMITS.dashboardSignInsPerMinute a minute, right or wrong,
 * then `429` with `Retry-After`; tokens the operator API refuses count the same; expired sessions
 * are deleted (when read, and by the host's hourly sweep) instead of kept for good.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { sweepExpiredDashboardSessions } from "../host/http/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { postSignIn } from "./helpers/dashboard.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost();
});
afterAll(() => host.dispose());

const stored = async () => (await host.database.records<unknown>("dashboard-sessions").entries(1000)).length;

it("deletes expired sessions: the hourly sweep, and one presented after it expired", async () => {
  const first = await postSignIn(host, host.adminToken);
  const second = await postSignIn(host, host.adminToken);
  expect(first.response.status).toBe(302);
  expect(await stored()).toBe(2);
  expect(await sweepExpiredDashboardSessions(host.database)).toBe(0);
  // Thirteen hours on: both expired (sessions last 12 hours); the sweep deletes them.
  expect(await sweepExpiredDashboardSessions(host.database, Date.now() + 13 * 3600_000)).toBe(2);
  expect(await stored()).toBe(0);
  const expired = await sendRequest(`${host.url}/dashboard`, { headers: { cookie: second.pair } });
  expect(expired.status).toBe(302);
});

it("lets one address sign in a few times a minute, right or wrong, then answers 429", async () => {
  // However slowly this machine sends them (the limit refills one every 2 s), a burst meets it.
  let refused: Awaited<ReturnType<typeof postSignIn>> | undefined;
  let signedIn = 0;
  for (let i = 0; i < 10 * LIMITS.dashboardSignInsPerMinute && !refused; i++) {
    const token = i % 2 === 0 ? `${host.adminToken}x` : host.adminToken;
    const attempt = await postSignIn(host, token);
    if (attempt.response.status === 429) refused = attempt;
    else {
      expect(attempt.response.status).toBe(302);
      if (attempt.cookie) signedIn++;
    }
  }
  expect(refused).toBeDefined();
  expect(Number(refused?.response.headers["retry-after"])).toBeGreaterThan(0);
  expect(refused?.cookie).toBeUndefined();
  expect(await stored()).toBe(signedIn);
});

it("counts tokens /v1, /metrics and /v1/backup refuse the same way, per address (found by review)", async () => {
  // Before: /v1/me answered 2,569 wrong tokens a second to one connection, never 429.
  const proxied = await startTestHost({ trustProxy: true });
  try {
    const paths = ["/v1/me", "/metrics", "/v1/backup"];
    const guess = (i: number, address: string, token = `guess-${i}`) =>
      sendRequest(`${proxied.url}${paths[i % paths.length]}`, {
        headers: { authorization: `Bearer ${token}`, "x-forwarded-for": address },
      });
    let refused: Awaited<ReturnType<typeof guess>> | undefined;
    for (let i = 0; i < 10 * LIMITS.dashboardSignInsPerMinute && !refused; i++) {
      const response = await guess(i, "10.9.0.1");
      if (response.status === 429) refused = response;
      else expect(response.status).toBe(403);
    }
    expect(refused?.json<{ error: { code: string } }>().error.code).toBe("limit_exceeded");
    expect(Number(refused?.headers["retry-after"])).toBeGreaterThan(0);
    // Another address, and the operator from it, are not held back.
    expect((await guess(0, "10.9.0.2")).status).toBe(403);
    expect((await guess(0, "10.9.0.2", proxied.adminToken)).status).toBe(200);
    // A deployment's storage listing takes the operator's token too, and counts the same.
    expect((await proxied.deployFixture("files", "todo")).status).toBe(201);
    let listingRefused: Awaited<ReturnType<typeof guess>> | undefined;
    for (let i = 0; i < 10 * LIMITS.dashboardSignInsPerMinute && !listingRefused; i++) {
      const response = await sendRequest(`${proxied.deploymentUrl("files")}/__platform/storage`, {
        headers: { authorization: `Bearer guess-${i}`, "x-forwarded-for": "10.9.0.3" },
      });
      if (response.status === 429) listingRefused = response;
      else expect(response.status).toBe(403);
    }
    expect(listingRefused?.json<{ error: { code: string; message: string } }>().error).toMatchObject({
      code: "limit_exceeded",
      message: expect.stringContaining("Your address tried too many tokens"),
    });
  } finally {
    await proxied.dispose();
  }
});

it("stores no fast hash of the operator token, and its sessions still sign in", async () => {
  // A session stored the token's SHA-256: a backup or a copy of the data folder gave an operator's
  // memorable token away for one fast hash a guess (an attack review, 2026-12-07).
  const own = await startTestHost();
  try {
    const signedIn = await postSignIn(own, own.adminToken);
    expect(signedIn.response.status).toBe(302);
    const records = JSON.stringify(await own.database.records<unknown>("dashboard-sessions").entries(1000));
    expect(records).not.toContain(createHash("sha256").update(own.adminToken).digest("hex"));
    expect(records).not.toContain(own.adminToken);
    const page = await sendRequest(`${own.url}/dashboard`, { headers: { cookie: signedIn.pair } });
    expect(page.status).toBe(200);
  } finally {
    await own.dispose();
  }
});
