/**
 * The control plane counts each developer's requests, and the bytes it answers them, against the
 * request quota (a bucket per developer; the operator is not counted): one developer's loop over
 * large data-browser pages held every tenant's calls on the host's main thread (an attack review,
 * 2026-12-06: six at once put a good tenant's query at p99 482 ms). Real host over HTTP, with a
 * quota of 4 requests and practically no refill.
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { DataConsole } from "../host/deployments/data-console.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deferred } from "./helpers/deferred.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
const BURST = 4;

beforeAll(async () => {
  host = await startTestHost({ requestQuota: { burst: BURST, perSecond: 0.001 } });
});
afterAll(() => host?.dispose());

async function developer(name: string): Promise<string> {
  return (await host.admin("/v1/developers", "POST", { name })).json<{ token: string }>().token;
}

it("refuses a developer's requests past their quota, with when to retry; other developers and the operator go on", async () => {
  const ann = await developer("ann");
  for (let i = 0; i < BURST; i++)
    expect((await host.admin("/v1/me", "GET", undefined, ann)).status).toBe(200);
  const refused = await host.admin("/v1/me", "GET", undefined, ann);
  expect(refused.status, refused.text()).toBe(429);
  expect(refused.json<{ error: { code: string } }>().error.code).toBe("limit_exceeded");
  expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);

  const bo = await developer("bo");
  expect((await host.admin("/v1/me", "GET", undefined, bo)).status).toBe(200);
  for (let i = 0; i < BURST * 3; i++) expect((await host.admin("/v1/deploys", "GET")).status).toBe(200);
});

it("counts a large answer as one request per 64 KiB of it", async () => {
  const cy = await developer("cy");
  const me = (await host.admin("/v1/me", "GET", undefined, cy)).json<{ id: string }>();
  const code = await fixtureCode("todo");
  expect((await host.admin("/v1/deploys", "POST", { id: "cy-rows", code, owner: me.id })).status).toBe(201);
  // Written by the app (its callers' quota, not cy's): 3 rows of 100,000 characters.
  for (let i = 0; i < 3; i++) {
    const added = await host.call("cy-rows", "mutation", "add", { text: `${i}`.repeat(100_000) });
    expect(added.status, added.text()).toBe(200);
  }
  const page = await host.admin("/v1/deploys/cy-rows/tables/todos/rows?numItems=10", "GET", undefined, cy);
  expect(page.status, page.text().slice(0, 200)).toBe(200);
  expect(page.body.length).toBeGreaterThan(BURST * LIMITS.answerBytesPerRequest);
  // Two of its four requests gone, and the answer's bytes took the rest and more.
  const next = await host.admin("/v1/me", "GET", undefined, cy);
  expect(next.status, next.text()).toBe(429);
});

it("runs a developer's requests a few at a time, so a burst of large pages is charged as it goes", async () => {
  // Each answer's bytes are charged once it is made: a thousand pages asked for at once were all
  // admitted before the first was charged (the change's review).
  const roomy = await startTestHost({ requestQuota: { burst: 24, perSecond: 0.001 } });
  try {
    const dev = (await roomy.admin("/v1/developers", "POST", { name: "dee" })).json<{
      id: string;
      token: string;
    }>();
    const code = await fixtureCode("todo");
    expect((await roomy.admin("/v1/deploys", "POST", { id: "dee-rows", code, owner: dev.id })).status).toBe(
      201,
    );
    for (let i = 0; i < 3; i++)
      expect((await roomy.call("dee-rows", "mutation", "add", { text: `${i}`.repeat(100_000) })).status).toBe(
        200,
      );
    // Every page held once it is being read, until 24 were asked for: they all arrive before any
    // answer's bytes are charged.
    const release = deferred();
    let reading = 0;
    const rows = DataConsole.prototype.rows;
    const spy = vi.spyOn(DataConsole.prototype, "rows").mockImplementation(async function (
      this: DataConsole,
      ...args
    ) {
      reading++;
      await release.promise;
      return rows.apply(this, args);
    });
    let pages: Awaited<ReturnType<typeof roomy.admin>>[];
    try {
      const asked = Array.from({ length: 24 }, () =>
        roomy.admin("/v1/deploys/dee-rows/tables/todos/rows?numItems=10", "GET", undefined, dev.token),
      );
      await vi.waitFor(() => expect(reading).toBe(LIMITS.controlPlaneRequestsAtOnce), { timeout: 10_000 });
      release.resolve();
      pages = await Promise.all(asked);
    } finally {
      release.resolve();
      spy.mockRestore();
    }
    const answered = pages.filter((page) => page.status === 200).length;
    expect(pages.filter((page) => page.status !== 200 && page.status !== 429)).toEqual([]);
    // Four at a time, each about five requests' worth: the quota is spent after the first few.
    expect(answered).toBeGreaterThanOrEqual(LIMITS.controlPlaneRequestsAtOnce);
    expect(answered).toBeLessThanOrEqual(2 * LIMITS.controlPlaneRequestsAtOnce);
  } finally {
    await roomy.dispose();
  }
});
