/**
 * Per-caller request quotas over real HTTP and WebSockets: a caller over its budget gets 429
 * `limit_exceeded` while others are unaffected, and every subscriber of a shared live query is
 * charged for each result pushed to it (docs/limits.md), its pushes waiting for the quota.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup, sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deployOwnedWithSession, startTestHost, type TestHost } from "./helpers/host.js";
import { storableRandomBytes } from "./helpers/random-bytes.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost({ requestQuota: { perSecond: 2, burst: 3 } });
  expect((await host.deployFixture("quota", "live")).status).toBe(201);
  expect((await host.deployFixture("files", "live")).status).toBe(201);
});
afterAll(() => host.dispose());

async function guestToken(): Promise<string> {
  const response = await sendRequest(`${host.deploymentUrl("quota")}/__platform/auth/guest`, {
    method: "POST",
  });
  return response.json<{ token: string }>().token;
}

const call = (name: string, args: unknown, token?: string) =>
  sendRequest(`${host.deploymentUrl("quota")}/api/mutation/${name}`, {
    method: "POST",
    headers: token ? { authorization: `Bearer ${token}` } : {},
    body: JSON.stringify(args),
  });

it("answers 429 limit_exceeded to a caller over its quota, and only to that caller", async () => {
  for (let i = 0; i < 3; i++) expect((await call("add", { bucket: 1, text: `${i}` })).status).toBe(200);
  const refused = await call("add", { bucket: 1, text: "too many" });
  expect(refused.status).toBe(429);
  expect(refused.headers["retry-after"]).toBe("1");
  expect(refused.json()).toEqual({
    error: {
      code: "limit_exceeded",
      message: expect.stringMatching(/^Request quota exceeded: .*retry in 1 s\.$/),
    },
  });
  expect((await call("add", { bucket: 1, text: "another caller" }, await guestToken())).status).toBe(200);
});

it("charges every subscriber of a shared query for each push; held pushes arrive when the quota refills", async () => {
  // Two sockets of one caller share one execution per commit, and each push costs that caller one
  // request: with a burst of 3, the initial values and one push fit; the rest wait for refills.
  const token = await guestToken();
  const subscriber = async () => {
    const ws = new WebSocket(
      `${host.deploymentUrl("quota").replace("http", "ws")}/api/sync?platform_token=${token}`,
      { lookup: localhostLookup } as WebSocket.ClientOptions,
    );
    const values: Array<{ at: number; value: string[] }> = [];
    ws.on("message", (data) => {
      const message = JSON.parse(String(data)) as { type: string; value: string[] };
      if (message.type === "value") values.push({ at: Date.now(), value: message.value });
    });
    await new Promise((resolve) => ws.once("open", resolve));
    ws.send(JSON.stringify({ type: "subscribe", id: "s", name: "byBucket", args: { bucket: 77 } }));
    return { ws, values };
  };
  const a = await subscriber();
  const b = await subscriber();
  while (a.values.length === 0 || b.values.length === 0) await new Promise((r) => setTimeout(r, 10));
  const executions = host.live.executions;
  const writer = await guestToken();
  for (const text of ["one", "two", "three"]) {
    expect((await call("add", { bucket: 77, text }, writer)).status).toBe(200);
    await host.live.settled();
  }
  const wrote = Date.now();
  // One shared execution per commit for both subscribers.
  expect(host.live.executions - executions).toBe(3);
  for (const s of [a, b]) {
    while (s.values.at(-1)?.value.length !== 3) await new Promise((r) => setTimeout(r, 10));
  }
  const pushes = [...a.values, ...b.values].filter((v) => v.value.length > 0);
  // Six results were due; the quota held some back and only each subscription's latest was sent.
  expect(pushes.length).toBeLessThan(6);
  const last = Math.max(...pushes.map((v) => v.at));
  expect(last - wrote).toBeGreaterThanOrEqual(200);
  a.ws.close();
  b.ws.close();
});

it("charges uploads and downloads too, in one bucket of their own per client address", async () => {
  // Storage routes took no request quota: one client stored 3,000 empty files in 3.2 s, and each
  // download of a stored file was free to repeat.
  const missing = () => sendRequest(`${host.deploymentUrl("files")}/storage/public/${"a".repeat(22)}`);
  for (let i = 0; i < 3; i++) expect((await missing()).status).toBe(404);
  const refused = await missing();
  expect(refused.status).toBe(429);
  expect(refused.json<{ error: { code: string } }>().error.code).toBe("limit_exceeded");
  // One bucket for every deployment (and names of none): each lookup reads the database.
  for (const id of ["quota", "nowhere"])
    expect((await sendRequest(`${host.deploymentUrl(id)}/storage/public/${"a".repeat(22)}`)).status).toBe(
      429,
    );
  // The client's data calls have a bucket of their own.
  expect(
    (await sendRequest(`${host.deploymentUrl("files")}/api/query/clock`, { method: "POST", body: "{}" }))
      .status,
  ).toBe(200);
});

it("charges looking up a deployment this host does not hold to the client's address, whatever id it names", async () => {
  // Each request naming a new id read the database, in a fresh per-deployment bucket (or none for
  // an app's pages): one client made unlimited reads of the pool every tenant's sessions use.
  const strict = await startTestHost({ requestQuota: { perSecond: 0.001, burst: 3 } });
  try {
    expect((await strict.deployFixture("known", "live")).status).toBe(201);
    const page = (id: string) => sendRequest(`${strict.deploymentUrl(id)}/`);
    for (let i = 0; i < 3; i++) expect((await page(`ghost${i}`)).status).toBe(404);
    const refused = await page("ghost3");
    expect(refused.status).toBe(429);
    expect(refused.json<{ error: { code: string } }>().error.code).toBe("limit_exceeded");
    expect(
      (await sendRequest(`${strict.deploymentUrl("ghost4")}/api/query/x`, { method: "POST" })).status,
    ).toBe(429);
    // A socket's upgrade is charged the same (it has a bucket of its own for upgrades too).
    const upgraded = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${strict.deploymentUrl("ghost5").replace("http", "ws")}/api/sync`, {
        lookup: localhostLookup,
      } as WebSocket.ClientOptions);
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("open", () => resolve(101));
      ws.once("error", () => {});
    });
    expect(upgraded).toBe(429);
    // A name no deployment could have is answered at once, reading nothing; a deployment the host
    // serves costs nothing of this bucket.
    const notAnId = await page("not_an_id");
    expect(notAnId.status).toBe(404);
    expect(notAnId.json<{ error: { message: string } }>().error.message).toMatch(/^Unknown host/);
    const served = await sendRequest(`${strict.deploymentUrl("known")}/api/query/byBucket`, {
      method: "POST",
      body: JSON.stringify({ bucket: 1 }),
    });
    expect(served.status, served.text()).toBe(200);
  } finally {
    await strict.dispose();
  }
});

it("charges a stored file's download by its size, one more request per 64 KiB, as client files are", async () => {
  // Each download of a 5 MiB file cost one request: a client took 500 MB a second of the host.
  const sized = await startTestHost({ requestQuota: { perSecond: 0.001, burst: 20 } });
  try {
    const token = await deployOwnedWithSession(sized, "files", "live", "ann@example.com");
    const bytes = storableRandomBytes(LIMITS.answerBytesPerRequest * 16);
    bytes.fill(0, 0, 16);
    const stored = await sendRequest(`${sized.deploymentUrl("files")}/storage?public=true`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
      body: bytes,
    });
    expect(stored.status, stored.text()).toBe(201);
    const { url } = stored.json<{ url: string }>();
    // The upload cost 1 of 20; each download 1 + 16, the last taken as a debt.
    for (let i = 0; i < 2; i++) {
      const download = await sendRequest(url);
      expect([download.status, download.body.length]).toEqual([200, bytes.length]);
    }
    expect((await sendRequest(url)).status).toBe(429);
  } finally {
    await sized.dispose();
  }
});

it("charges an answer's size: one more request per 64 KiB, so large answers cannot be asked for at the rate of small ones", async () => {
  // An endpoint's 8 Mi characters of "€" held the host's main thread 66 ms a request: with only a
  // request each, one caller's quota (100 a second) asked for 6.6 s of it every second.
  const sized = await startTestHost({ requestQuota: { perSecond: 0.001, burst: 20 } });
  try {
    expect((await sized.deployFixture("ep", "endpoints")).status).toBe(201);
    const big = LIMITS.answerBytesPerRequest * 16;
    // A 1 MiB endpoint answer costs 1 + 16: three small requests are left of twenty.
    const answer = await sendRequest(`${sized.deploymentUrl("ep")}/repeat?code=97&n=${big}`);
    expect([answer.status, answer.body.length]).toEqual([200, big]);
    for (let i = 0; i < 3; i++)
      expect((await sendRequest(`${sized.deploymentUrl("ep")}/hello`)).status).toBe(202);
    const refused = await sendRequest(`${sized.deploymentUrl("ep")}/hello`);
    expect(refused.status).toBe(429);
    // A query's answer over HTTP is charged the same, to its own caller (another guest here).
    const token = (
      await sendRequest(`${sized.deploymentUrl("ep")}/__platform/auth/guest`, { method: "POST" })
    ).json<{ token: string }>().token;
    const query = (n: number) =>
      sendRequest(`${sized.deploymentUrl("ep")}/api/query/repeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify({ n }),
      });
    expect((await query(big)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await query(1)).status).toBe(200);
    expect((await query(1)).status).toBe(429);
    // A live query's push is charged before it goes: its subscribe (1) and its 1 MiB result
    // (1 + 16) leave two requests of the third caller's twenty.
    const third = (
      await sendRequest(`${sized.deploymentUrl("ep")}/__platform/auth/guest`, { method: "POST" })
    ).json<{ token: string }>().token;
    const ws = new WebSocket(
      `${sized.deploymentUrl("ep").replace("http", "ws")}/api/sync?platform_token=${third}`,
      { lookup: localhostLookup } as WebSocket.ClientOptions,
    );
    const pushed = new Promise<number>((resolve) =>
      ws.on("message", (data) => {
        const message = JSON.parse(String(data)) as { type: string; value?: string };
        if (message.type === "value") resolve(message.value?.length ?? 0);
      }),
    );
    await new Promise((resolve) => ws.once("open", resolve));
    ws.send(JSON.stringify({ type: "subscribe", id: "s", name: "repeat", args: { n: big } }));
    expect(await pushed).toBe(big);
    const asThird = (n: number) =>
      sendRequest(`${sized.deploymentUrl("ep")}/api/query/repeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${third}` },
        body: JSON.stringify({ n }),
      });
    for (let i = 0; i < 2; i++) expect((await asThird(1)).status).toBe(200);
    expect((await asThird(1)).status).toBe(429);
    ws.close();
  } finally {
    await sized.dispose();
  }
});
