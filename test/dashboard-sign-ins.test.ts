/**
 * Dashboard sign-ins are bounded: each stores a session, and a wrong token may be a guess at the
 * operator's. One client address gets LIMITS.dashboardSignInsPerMinute a minute, right or wrong,
 * then `429` with `Retry-After`; expired sessions are deleted (when read, and by the host's hourly
 * sweep) instead of kept for good.
 */
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
