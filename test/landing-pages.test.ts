/**
 * The roots of the control plane and of `platform dev` (when the capsule has no web client) answer
 * a small page with links instead of a JSON 404: where the dashboard and API are, which calls the
 * capsule declares. The pages run no script and cannot be framed; capsule-declared names are
 * escaped. A capsule with a client still serves its own `index.html` at `/`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let hosted: TestHost;
let dev: TestHost;

beforeAll(async () => {
  hosted = await startTestHost({ requestQuota: false });
  dev = await startTestHost({ requestQuota: false, devDeployment: "dev" });
  await dev.deployments.deploy("dev", { code: await fixtureCode("endpoints") });
});
afterAll(async () => {
  await hosted.dispose();
  await dev.dispose();
});

function expectSafePage(response: HttpResponse): string {
  expect(response.status).toBe(200);
  expect(response.headers["content-type"]).toBe("text/html; charset=utf-8");
  expect(response.headers["content-security-policy"]).toContain("default-src 'none'");
  expect(response.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
  expect(response.headers["x-frame-options"]).toBe("DENY");
  expect(response.text()).not.toMatch(/<script/i);
  return response.text();
}

describe("landing pages", () => {
  it("the control plane's root links to the dashboard and names the API", async () => {
    const body = expectSafePage(await sendRequest(`${hosted.url}/`));
    expect(body).toContain('href="/dashboard"');
    expect(body).toContain("GET /v1/deploys");
    // Other paths of the control plane still end in the JSON 404.
    const missing = await sendRequest(`${hosted.url}/nothing-here`);
    expect(missing.status).toBe(404);
    expect(missing.json<{ error: { code: string } }>().error.code).toBe("not_found");
  });

  it("platform dev's root lists the capsule's calls when it has no web client", async () => {
    const body = expectSafePage(await sendRequest(`${dev.deploymentUrl("dev")}/`));
    const record = await dev.deployments.require("dev");
    for (const name of record.declaration.queries) expect(body).toContain(`POST /api/query/${name}`);
    for (const name of record.declaration.mutations) expect(body).toContain(`POST /api/mutation/${name}`);
    for (const endpoint of record.declaration.endpoints)
      expect(body).toContain(`${endpoint.method} ${endpoint.path}`);
    expect(body).toContain('href="/__platform/logs"');
  });
});
