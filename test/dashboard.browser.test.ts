/**
 * The storage dashboard in a real browser (Debian's Chromium via playwright-core): a developer
 * signs in, sees an uploaded file with its details, deletes it, and sees it gone.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { launchChromium } from "./helpers/browser.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let browser: Browser;
let developerToken: string;
let key: string;

beforeAll(async () => {
  host = await startTestHost();
  const admin = { authorization: `Bearer ${host.adminToken}`, "content-type": "application/json" };
  const developer = (
    await sendRequest(`${host.url}/v1/developers`, {
      method: "POST",
      headers: admin,
      body: '{"name":"Dana"}',
    })
  ).json<{ id: string; token: string }>();
  developerToken = developer.token;
  await sendRequest(`${host.url}/v1/deploys`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ id: "dash", code: await fixtureCode("access"), owner: developer.id }),
  });
  const account = (
    await sendRequest(`${host.url}/v1/deploys/dash/sessions`, {
      method: "POST",
      headers: admin,
      body: '{"email":"uploader@example.com"}',
    })
  ).json<{ token: string }>();
  const uploaded = await sendRequest(`${host.deploymentUrl("dash")}/storage?public=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${account.token}`, "content-type": "text/plain" },
    body: "hello dashboard",
  });
  key = uploaded.json<{ key: string }>().key;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host.dispose();
});

it("signs a developer in, shows the file, deletes it and shows it gone", async () => {
  const page = await browser.newPage();
  await page.goto(`${host.url}/deploys/dash/storage`);
  expect(page.url()).toContain("/dashboard/login");
  await page.fill('input[name="token"]', "pdt_wrong");
  await page.click('button[type="submit"]');
  expect(await page.content()).toContain("That token was not accepted.");
  await page.fill('input[name="token"]', developerToken);
  await page.click('button[type="submit"]');
  await page.waitForURL(/\/deploys\/dash\/storage$/);
  const row = page.locator("tr", { hasText: key });
  expect(await row.count()).toBe(1);
  const cells = await row.locator("td").allTextContents();
  expect(cells.slice(0, 5)).toEqual([key, "public", "15 B", "text/plain", "uploader@example.com"]);
  expect(cells[5]).toBe("just now");
  await page.screenshot({ path: "/tmp/platform-dashboard.png" });
  await row.locator("button", { hasText: "Delete" }).click();
  await page.waitForURL(/\/deploys\/dash\/storage$/);
  expect(await page.locator("tr", { hasText: key }).count()).toBe(0);
  expect(await page.content()).toContain("No files yet.");
  expect((await sendRequest(`${host.deploymentUrl("dash")}/storage/${key}`)).status).toBe(404);
  await page.close();
}, 60_000);

it("refuses deletes without the session's CSRF token", async () => {
  const response = await sendRequest(`${host.url}/deploys/dash/storage/delete`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `key=${encodeURIComponent(key)}&csrf=forged`,
  });
  expect(response.status).toBe(403);
});
