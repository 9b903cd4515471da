/**
 * Deployment ids a developer may not take: host names browsers and mail clients look up by
 * themselves under the host's domain (`wpad.`, `autodiscover.`, `mta-sts.`...) and names that
 * would pass for the host's own (`dashboard.`, `login.`). The operator may create them.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { RESERVED_DEPLOYMENT_IDS } from "../host/access/index.js";
import { exportZip, importZip } from "./helpers/export-import.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let developer = "";

beforeAll(async () => {
  host = await startTestHost();
  developer = (await host.admin("/v1/developers", "POST", { name: "mallory" })).json<{ token: string }>()
    .token;
});
afterAll(() => host.dispose());

const asDeveloper = async (path: string, method: string, body?: unknown) =>
  sendRequest(`${host.url}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${developer}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

function expectReserved(response: { status: number; json: <T>() => T }, id: string): void {
  expect(response.status).toBe(403);
  expect(response.json<{ error: { code: string; message: string } }>().error).toEqual({
    code: "forbidden",
    message: expect.stringContaining(`The deployment id ${id} is reserved on this host`),
  });
}

it("refuses a developer's deploy or import creating a reserved id, and lets the operator create one", async () => {
  const code = await fixtureCode("todo");
  expect(RESERVED_DEPLOYMENT_IDS.has("autodiscover")).toBe(true);
  expectReserved(await asDeveloper("/deploys", "POST", { id: "wpad", code }), "wpad");
  expectReserved(await asDeveloper("/deploys/autodiscover", "PUT", { code }), "autodiscover");
  // An import that would create one is refused before its upload is read.
  expect((await host.deployFixture("source", "todo")).status).toBe(201);
  const archive = (await exportZip(host, "source")).body;
  expectReserved(await importZip(host, "mta-sts", archive, "", developer), "mta-sts");
  for (const id of ["wpad", "autodiscover", "mta-sts"])
    expect((await host.admin(`/v1/deploys/${id}`, "GET")).status).toBe(404);
  // Any other id is the developer's to take; the operator may take a reserved one.
  expect((await asDeveloper("/deploys", "POST", { id: "autodiscovery", code })).status).toBe(201);
  expect((await host.admin("/v1/deploys", "POST", { id: "www", code })).status).toBe(201);
});
