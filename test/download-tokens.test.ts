/**
 * `storage.authorizedUrl` puts a download token in the URL, never the user's identity token: one
 * file, read only, for an hour, refused by every other route. Before, the URL carried the
 * identity token itself: anyone the URL reached (a copied image address, a proxy's log) could
 * renew it for 30 days and call the app as that user. Real host, real HTTP.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import type app from "../fixtures/live-app/server/index.js";
import { createClient, nodeFetch, type PlatformClient } from "../sdk/client/node.js";
import { emailCode, fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let c: PlatformClient<typeof app>;
beforeAll(async () => {
  host = await startTestHost();
  const owner = (await host.admin("/v1/developers", "POST", { name: "pics-owner" })).json<{ id: string }>();
  const deployed = await host.admin("/v1/deploys", "POST", {
    id: "pics",
    code: await fixtureCode("live-app"),
    owner: owner.id,
  });
  expect(deployed.status).toBe(201);
  c = createClient<typeof app>(host.deploymentUrl("pics"));
  await c.auth.ready();
  await c.auth.startEmailSignIn("pics@example.com");
  await c.auth.verifyEmailCode("pics@example.com", await emailCode(host, "pics@example.com"));
});
afterAll(async () => {
  c.close();
  await host.dispose();
});

const upload = (text: string) => c.storage.upload(new Blob([text], { type: "text/plain" }));
const bearer = (token: string) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });

it("gives a URL that downloads the file, carrying a download token and not the identity token", async () => {
  const file = await upload("the private text");
  expect((await nodeFetch(file.url, { method: "GET", headers: {} })).status).toBe(401);
  const url = new URL(await c.storage.authorizedUrl(file.url));
  const identity = (await c.auth.token()) as string;
  expect(url.searchParams.get("platform_token")).toBeNull();
  expect(url.toString()).not.toContain(identity);
  const downloaded = await nodeFetch(url.toString(), { method: "GET", headers: {} });
  expect(await downloaded.text()).toBe("the private text");
  // The same file again: the token kept is handed out again.
  expect(await c.storage.authorizedUrl(file.url)).toBe(url.toString());
});

it("refuses the download token for anything but that one file", async () => {
  const file = await upload("one");
  const other = await upload("another");
  const download = new URL(await c.storage.authorizedUrl(file.url)).searchParams.get(
    "platform_download",
  ) as string;
  const base = host.deploymentUrl("pics");
  // Another file.
  const elsewhere = await nodeFetch(`${other.url}?platform_download=${encodeURIComponent(download)}`, {
    method: "GET",
    headers: {},
  });
  expect(elsewhere.status).toBe(401);
  // As an identity: renewal, a call, an upload, as the storage query token, a sync socket.
  const renewed = await sendRequest(`${base}/__platform/auth/renew`, {
    method: "POST",
    headers: bearer(download),
  });
  expect(renewed.status).toBe(401);
  expect(renewed.json<{ error: { message: string } }>().error.message).toMatch(
    /only downloads one stored file/,
  );
  const called = await sendRequest(`${base}/api/query/list`, {
    method: "POST",
    headers: bearer(download),
    body: JSON.stringify({ paginationOpts: { numItems: 1, cursor: null } }),
  });
  expect(called.status).toBe(401);
  const uploaded = await sendRequest(`${base}/storage`, {
    method: "POST",
    headers: { authorization: `Bearer ${download}`, "content-type": "text/plain" },
    body: "x",
  });
  expect(uploaded.status).toBe(401);
  const asQueryToken = await nodeFetch(`${file.url}?platform_token=${encodeURIComponent(download)}`, {
    method: "GET",
    headers: {},
  });
  expect(asQueryToken.status).toBe(401);
  const minted = await sendRequest(`${base}/storage/download-tokens`, {
    method: "POST",
    headers: bearer(download),
    body: JSON.stringify({ key: other.key }),
  });
  expect(minted.status).toBe(401);
});

it("refuses a URL that is not a stored file's", async () => {
  await expect(c.storage.authorizedUrl(`${host.deploymentUrl("pics")}/api/query/list`)).rejects.toMatchObject(
    {
      code: "invalid_request",
    },
  );
});

it("stops working when the user signs out, and a new user gets tokens of their own", async () => {
  const file = await upload("the account's file");
  const url = await c.storage.authorizedUrl(file.url);
  expect((await nodeFetch(url, { method: "GET", headers: {} })).status).toBe(200);
  await c.auth.signOut();
  expect((await nodeFetch(url, { method: "GET", headers: {} })).status).toBe(401);
  // The guest after the sign-out is handed no token of the account's.
  const after = await c.storage.authorizedUrl(file.url);
  expect(after).not.toBe(url);
});
