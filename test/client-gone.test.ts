/**
 * A client that hangs up in the middle of a streamed response (a backup, an export, a log follow)
 * is not the host's failure: the host logs nothing for it, and serves the next request.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("todo", "todo")).status).toBe(201);
  for (let i = 0; i < 50; i++)
    await host.call("todo", "mutation", "add", { text: `task ${i} ${"x".repeat(500)}` });
});
afterAll(() => host.dispose());

/** Starts `path` on the control plane and hangs up once the first bytes of the body arrived. */
function hangUpMidStream(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${host.url}${path}`,
      { headers: { authorization: `Bearer ${host.adminToken}` } },
      (res) => {
        expect(res.statusCode).toBe(200);
        res.once("data", () => {
          req.destroy();
          resolve();
        });
      },
    );
    req.on("error", (error) => (req.destroyed ? undefined : reject(error)));
    req.end();
  });
}

describe("a client hanging up mid-stream", () => {
  it("is not logged as an error, and the host serves the next request", async () => {
    const logged = vi.spyOn(console, "error");
    try {
      await hangUpMidStream("/v1/backup");
      await hangUpMidStream("/v1/deploys/todo/export");
      // The host has seen both hang-ups once a new backup may start (one runs at a time).
      let status = 0;
      for (let i = 0; i < 400 && status !== 200; i++) {
        const next = await host.admin("/v1/backup", "GET");
        status = next.status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(status).toBe(200);
      expect(logged.mock.calls.map((call) => String(call[0]))).toEqual([]);
    } finally {
      logged.mockRestore();
    }
  });
});
