/**
 * Host behaviour around deployments: the operator API (create, redeploy, list, show, delete), LRU
 * eviction of isolates, and routing by Host header.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost({ pool: { maxLive: 2 } });
});
afterAll(() => host.dispose());

const admin = () => ({ authorization: `Bearer ${host.adminToken}`, "content-type": "application/json" });

describe("operator API", () => {
  it("creates, lists, shows, redeploys and deletes deployments", async () => {
    const code = await fixtureCode("todo");
    const created = await sendRequest(`${host.url}/v1/deploys`, {
      method: "POST",
      headers: admin(),
      body: JSON.stringify({ id: "ops", code, env: { SECRET: "s3cret" } }),
    });
    expect(created.status, created.text()).toBe(201);
    expect(created.text()).not.toContain("s3cret");
    const again = await sendRequest(`${host.url}/v1/deploys`, {
      method: "POST",
      headers: admin(),
      body: JSON.stringify({ id: "ops", code }),
    });
    expect(again.status).toBe(409);
    await host.call("ops", "mutation", "add", { text: "kept" });
    const redeployed = await host.deployCode("ops", code);
    expect(redeployed.status).toBe(200);
    const list = await sendRequest(`${host.url}/v1/deploys`, { headers: admin() });
    expect(list.json<{ deploys: Array<{ id: string }> }>().deploys.map((d) => d.id)).toContain("ops");
    expect(list.text()).not.toContain("s3cret");
    const shown = await sendRequest(`${host.url}/v1/deploys/ops`, { headers: admin() });
    expect(shown.json()).toMatchObject({
      id: "ops",
      queries: ["list", "open", "get", "count"],
      tables: ["todos"],
      envKeys: 1,
    });
    expect((await host.call("ops", "query", "count")).json()).toEqual({ value: 1 });
    const removed = await sendRequest(`${host.url}/v1/deploys/ops`, { method: "DELETE", headers: admin() });
    expect(removed.status).toBe(204);
    const gone = await host.call("ops", "query", "count");
    expect(gone.status).toBe(404);
    expect((await sendRequest(`${host.url}/v1/deploys/ops`, { headers: admin() })).status).toBe(404);
  });

  it("rejects bad deployment ids and bodies", async () => {
    const badId = await sendRequest(`${host.url}/v1/deploys/Bad_Id`, {
      method: "PUT",
      headers: admin(),
      body: JSON.stringify({ code: "x" }),
    });
    expect(badId.status).toBe(400);
    const noCode = await sendRequest(`${host.url}/v1/deploys/fine`, {
      method: "PUT",
      headers: admin(),
      body: "{}",
    });
    expect(noCode.json<{ error: { message: string } }>().error.message).toBe(
      "A deploy needs { code: <bundle>, env?: {...}, client?: [{ path, data: <base64> }] }.",
    );
    const notJson = await sendRequest(`${host.url}/v1/deploys/fine`, {
      method: "PUT",
      headers: admin(),
      body: "nope",
    });
    expect(notJson.json<{ error: { code: string } }>().error.code).toBe("bad_request");
  });

  it("answers unknown hosts with not_found", async () => {
    const response = await sendRequest(`http://127.0.0.1:${host.port}/api/query/list`, { method: "POST" });
    expect(response.status).toBe(404);
    expect(response.json<{ error: { code: string } }>().error.code).toBe("not_found");
  });
});

describe("isolate pool", () => {
  it("keeps at most maxLive isolates, evicting the least recently used, and restarts them on demand", async () => {
    for (const id of ["p1", "p2", "p3"]) {
      expect((await host.deployFixture(id, "todo")).status).toBe(201);
      await host.call(id, "mutation", "add", { text: id });
    }
    expect(host.deployments.pool.liveCount()).toBeLessThanOrEqual(2);
    for (const id of ["p1", "p2", "p3", "p1"]) {
      expect((await host.call(id, "query", "count")).json()).toEqual({ value: 1 });
      expect(host.deployments.pool.liveCount()).toBeLessThanOrEqual(2);
    }
    expect(host.deployments.pool.runner("p1", "").isLive).toBe(true);
  });
});
