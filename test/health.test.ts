/**
 * Load balancers' probes on the control plane: `/healthz` while the process serves, `/readyz` only
 * while the database and the blob store answer, without credentials and without details. On
 * PostgreSQL, `/readyz` fails while the server is stopped and recovers when it is back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { deployOwnedWithSession, startTestHost, type TestHost } from "./helpers/host.js";

async function probe(host: TestHost, path: string) {
  const response = await sendRequest(`${host.url}${path}`);
  return { status: response.status, text: response.text(), cache: response.headers["cache-control"] };
}

describe("health probes", () => {
  let host: TestHost;
  beforeAll(async () => {
    host = await startTestHost();
  });
  afterAll(() => host.dispose());

  it("answer without credentials and without details", async () => {
    expect(await probe(host, "/healthz")).toEqual({ status: 200, text: "ok\n", cache: "no-store" });
    expect(await probe(host, "/readyz")).toEqual({ status: 200, text: "ready\n", cache: "no-store" });
    // Only GET, only these paths; a deployment origin's own paths are untouched.
    expect((await sendRequest(`${host.url}/healthz`, { method: "POST" })).status).toBe(404);
    expect((await sendRequest(`${host.url}/healthz/x`)).status).toBe(404);
  });

  it("stay ready whatever a deployment is named and stores", async () => {
    // The probe read the blob `readyz-probe`: a deployment of that name storing one file made it
    // a folder on disk, and every probe after it failed, for good (its files' deletion left it).
    const token = await deployOwnedWithSession(host, "readyz-probe", "access", "a@example.com");
    const uploaded = await sendRequest(`${host.deploymentUrl("readyz-probe")}/storage`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
      body: Buffer.from("bytes"),
    });
    expect(uploaded.status, uploaded.text()).toBe(201);
    expect(await probe(host, "/readyz")).toEqual({ status: 200, text: "ready\n", cache: "no-store" });
  });
});

describe.skipIf(postgresBinDir() === undefined)("readiness on PostgreSQL", () => {
  let server: LocalPostgres;
  beforeAll(async () => {
    server = await startLocalPostgres();
  }, 60_000);
  afterAll(() => server?.stop());

  it("fails while the database is stopped and recovers when it is back", async () => {
    const host = await startTestHost({ database: server.url });
    try {
      expect((await probe(host, "/readyz")).status).toBe(200);
      await server.suspend();
      const down = await probe(host, "/readyz");
      expect(down).toEqual({ status: 503, text: "not ready\n", cache: "no-store" });
      // The process itself still serves.
      expect((await probe(host, "/healthz")).status).toBe(200);
      await server.resume();
      let up = await probe(host, "/readyz");
      // The pool replaces the connections the stop broke; the first probes after it may still fail.
      for (let tries = 0; up.status !== 200 && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        up = await probe(host, "/readyz");
      }
      expect(up).toEqual({ status: 200, text: "ready\n", cache: "no-store" });
    } finally {
      await host.dispose();
    }
  }, 120_000);
});
