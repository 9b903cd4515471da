/**
 * The dashboard under `platform dev`: at `http://dashboard.localhost:<port>/dashboard`, signed in by
 * itself for loopback requests, showing the one dev deployment. The automatic session lets no one
 * else act: a rebound DNS name (another Host) is refused before any session is made, a request
 * without the session's CSRF header or from another site's page is refused, and the app's own
 * origin (`localhost`) serves the app, not the dashboard.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { launchChromium } from "./helpers/browser.js";
import { type CliProcess, startDev } from "./helpers/cli.js";

let dir: string;
let dev: CliProcess;
let port: number;
let browser: Browser | undefined;
const IMAGES = join(process.cwd(), "docs", "images");

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-dev-dashboard-"));
  await cp("fixtures/todo", dir, { recursive: true });
  ({ dev, port } = await startDev(dir));
});
afterAll(async () => {
  await browser?.close();
  await dev.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A request to the dev server on 127.0.0.1 with `host` as its Host header. */
function at(
  host: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
) {
  return sendRequest(`http://127.0.0.1:${port}${path}`, {
    method: init.method ?? "GET",
    headers: { host: `${host}:${port}`, ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
}

function cookieOf(response: HttpResponse): string | undefined {
  const set = [response.headers["set-cookie"] ?? []].flat()[0];
  return set?.split(";")[0];
}

it("makes no session for a request another site's page made (an <img> pointed at the dashboard)", async () => {
  await dev.waitFor(/dashboard at http:\/\/dashboard\.localhost:\d+\/dashboard/);
  for (const site of ["cross-site", "same-site"]) {
    const loaded = await at("dashboard.localhost", "/dashboard", { headers: { "sec-fetch-site": site } });
    expect(loaded.status).toBe(302);
    expect(loaded.headers.location).toMatch(/^\/dashboard\/login/);
    expect(cookieOf(loaded)).toBeUndefined();
  }
});

it("prints the dashboard's address and signs loopback requests in as the dev deployment's operator", async () => {
  await dev.waitFor(/dashboard at http:\/\/dashboard\.localhost:\d+\/dashboard/);
  const shell = await at("dashboard.localhost", "/dashboard", { headers: { "sec-fetch-site": "none" } });
  expect(shell.status).toBe(200);
  const cookie = cookieOf(shell);
  const csrf = /data-csrf="([^"]+)"/.exec(shell.text())?.[1];
  expect(cookie).toMatch(/^platform_session=/);
  expect(csrf).toBeDefined();
  expect(String(shell.headers["set-cookie"])).toMatch(/samesite=strict/i);

  const session = {
    cookie: cookie as string,
    "x-platform-csrf": csrf as string,
    "sec-fetch-site": "same-origin",
  };
  await expect
    .poll(async () => (await at("dashboard.localhost", "/v1/deploys", { headers: session })).json())
    .toMatchObject({ deploys: [{ id: "dev" }] });
  const tables = await at("dashboard.localhost", "/v1/deploys/dev/tables", { headers: session });
  expect(tables.status, tables.text()).toBe(200);

  // The same cookie from another site's page, or without the CSRF header: refused.
  const { "x-platform-csrf": _, ...withoutCsrf } = session;
  for (const headers of [
    withoutCsrf,
    { ...session, "sec-fetch-site": "cross-site", origin: "http://evil.example" },
    { ...session, "sec-fetch-site": "same-site", origin: `http://localhost:${port}` },
  ]) {
    const refused = await at("dashboard.localhost", "/v1/deploys/dev", { method: "DELETE", headers });
    expect(refused.status).toBe(403);
  }
  // No cookie (a cross-site request never carries the SameSite=Strict one): no session is made for /v1.
  const anonymous = await at("dashboard.localhost", "/v1/deploys/dev", { method: "DELETE" });
  expect(anonymous.status).toBe(401);
  expect(cookieOf(anonymous)).toBeUndefined();
  expect((await at("dashboard.localhost", "/v1/deploys/dev", { headers: session })).status).toBe(200);
}, 120_000);

it("refuses a rebound DNS name before any session, and keeps the app's origin for the app", async () => {
  const rebound = await at("evil.example", "/dashboard", { headers: { "sec-fetch-site": "none" } });
  expect(rebound.status).toBe(403);
  expect(cookieOf(rebound)).toBeUndefined();
  const login = await at("evil.example", "/dashboard/login");
  expect(login.status).toBe(403);
  // The app at localhost is another origin: its /dashboard is the app's, with no session cookie.
  const app = await at("localhost", "/dashboard");
  expect(app.text()).not.toContain("data-csrf");
  expect(cookieOf(app)).toBeUndefined();
}, 60_000);

it("opens in a browser signed in, with the dev deployment's data", async () => {
  browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 640 } })).newPage();
  await page.goto(`http://dashboard.localhost:${port}/dashboard`);
  expect(new URL(page.url()).pathname).toBe("/dashboard");
  const row = page.getByRole("row", { name: /dev/ });
  await expect.poll(() => row.locator("td").nth(2).textContent()).toBe("unclaimed");
  await page.getByRole("link", { name: "dev", exact: true }).click();
  await page.waitForURL(/\/dashboard\/deploys\/dev\/data$/);
  await expect.poll(() => page.getByRole("heading", { name: /todos/ }).count()).toBe(1);
  await page.screenshot({ path: join(IMAGES, "dashboard-dev.png") });
  await page.context().close();
}, 120_000);
