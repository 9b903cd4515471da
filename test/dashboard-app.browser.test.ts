/**
 * The dashboard app in a real browser (Debian's Chromium via playwright-core, no browser download):
 * sign in, list deployments, browse a table by an index range and page through it, open a row, copy
 * its id, edit it (a wrong type shows the host's validation error), insert and delete a row, reach
 * the storage page through the same navigation, and sign out. Every page is saved as a screenshot
 * in docs/images/ for the README. Nothing is loaded from any other origin.
 */
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { launchChromium } from "./helpers/browser.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let browser: Browser;
let developerToken: string;
const IMAGES = join(process.cwd(), "docs", "images");
const foreign: string[] = [];

beforeAll(async () => {
  host = await startTestHost();
  const developer = (await host.admin("/v1/developers", "POST", { name: "Dana" })).json<{
    id: string;
    token: string;
  }>();
  developerToken = developer.token;
  const code = await fixtureCode("dashboard");
  expect((await host.admin("/v1/deploys", "POST", { id: "chat", code, owner: developer.id })).status).toBe(
    201,
  );
  expect(
    (
      await host.admin("/v1/deploys", "POST", {
        id: "notes",
        code: await fixtureCode("todo"),
        owner: developer.id,
      })
    ).status,
  ).toBe(201);
  const seeded = await host.call("chat", "mutation", "seed", {
    channels: ["general", "random"],
    perChannel: 60,
  });
  expect(seeded.status, seeded.text()).toBe(200);
  const account = (await host.admin("/v1/deploys/chat/sessions", "POST", { email: "ada@example.com" })).json<{
    token: string;
  }>();
  await sendRequest(`${host.deploymentUrl("chat")}/storage?public=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${account.token}`, "content-type": "text/plain" },
    body: "hello dashboard",
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host.dispose();
});

async function newPage(width = 1280, height = 800): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: host.url });
  const page = await context.newPage();
  page.on("request", (request) => {
    if (!request.url().startsWith(host.url) && !request.url().startsWith("data:"))
      foreign.push(request.url());
  });
  return page;
}

async function signIn(page: Page, path = "/dashboard"): Promise<void> {
  await page.goto(`${host.url}${path}`);
  expect(page.url()).toContain("/dashboard/login");
  await page.fill('input[name="token"]', developerToken);
  await Promise.all([
    page.waitForURL((url) => !url.pathname.startsWith("/dashboard/login")),
    page.click('button[type="submit"]'),
  ]);
}

it("signs in, lists deployments, browses a table by an index range and pages through it", async () => {
  const page = await newPage();
  await signIn(page);
  const chat = page.getByRole("row", { name: /chat/ });
  await expect.poll(() => chat.locator("td").nth(5).textContent()).toBe("122");
  const cells = await chat.locator("td").allTextContents();
  // The owner as people know them (the name given at POST /v1/developers), the id kept beside it.
  expect(cells.slice(0, 4)).toEqual(["chat", expect.stringMatching(/^Dana dev_/), "claimed", "v1"]);
  expect(cells[6]).toBe("1 · 15 B");
  await page.screenshot({ path: join(IMAGES, "dashboard-deployments.png") });

  await page.getByRole("link", { name: "chat", exact: true }).click();
  await page.waitForURL(/\/dashboard\/deploys\/chat\/data$/);
  await expect.poll(() => page.getByRole("heading", { name: /messages/ }).textContent()).toMatch(/120 rows/);
  await page.screenshot({ path: join(IMAGES, "dashboard-tables.png"), fullPage: true });

  await page.getByRole("link", { name: "messages", exact: true }).click();
  await page.waitForURL(/\/data\/messages$/);
  const rows = page.getByRole("table", { name: "Rows of messages" }).locator("tbody tr");
  await expect.poll(() => rows.count()).toBe(25);
  expect(await page.getByRole("heading", { level: 1 }).textContent()).toContain("120 rows");

  // A range on by_likes, built like withIndex: 3 <= likes <= 5, ascending.
  await page.getByLabel("Index").selectOption("by_likes");
  await page.getByLabel("Order").selectOption("asc");
  await page.getByLabel("Lower bound of likes").fill("3");
  await page.getByLabel("Upper bound of likes").fill("5");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForURL(/index=by_likes/);
  await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("36 rows");
  await expect.poll(() => rows.count()).toBe(25);
  const likesColumn = async () =>
    (await rows.locator("td:nth-child(6)").allTextContents()).map((text) => Number(text));
  const firstPage = await likesColumn();
  expect(firstPage.every((n) => n >= 3 && n <= 5)).toBe(true);
  expect(firstPage).toEqual([...firstPage].sort((a, b) => a - b));
  const bookmark = page.url();
  expect(new URL(bookmark).search).toBe("?index=by_likes&order=asc&gte.likes=3&lte.likes=5");
  await page.screenshot({ path: join(IMAGES, "dashboard-rows.png") });

  await page.getByRole("button", { name: "Next page" }).click();
  await page.waitForURL(/page=2/);
  await expect.poll(() => rows.count()).toBe(11);
  expect((await likesColumn()).every((n) => n >= 3 && n <= 5)).toBe(true);
  expect(await page.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true);
  await page.getByRole("button", { name: "Previous page" }).click();
  await page.waitForURL((url) => !url.search.includes("page=2"));
  await expect.poll(() => rows.count()).toBe(25);

  // The URL is the page: opened afresh (as a bookmark or a shared link), it shows the same rows.
  const again = await page.context().newPage();
  await again.goto(bookmark);
  await expect.poll(() => again.getByRole("heading", { level: 1 }).textContent()).toContain("36 rows");
  expect(await again.getByLabel("Lower bound of likes").inputValue()).toBe("3");
  await page.context().close();
}, 120_000);

it("opens a row, copies its id, edits it (a wrong type is refused), inserts and deletes", async () => {
  const page = await newPage();
  await signIn(page, "/dashboard/deploys/chat/data/messages");
  const rows = page.getByRole("table", { name: "Rows of messages" }).locator("tbody tr");
  await expect.poll(() => rows.count()).toBe(25);
  const firstOpen = rows.first().getByRole("button", { name: /^Open row / });
  const id = ((await firstOpen.getAttribute("aria-label")) as string).replace("Open row ", "");
  await firstOpen.click();
  await page.waitForURL(new RegExp(`row=${id}`));
  const panel = page.getByRole("complementary", { name: `Row ${id}` });
  await expect
    .poll(() => panel.getByRole("region", { name: "Row as JSON" }).textContent())
    .toContain(`"id": "${id}"`);
  await panel.getByRole("button", { name: `Copy id ${id}` }).click();
  await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(id);

  await panel.getByRole("button", { name: "Edit" }).click();
  const editor = panel.getByLabel(/Fields as JSON/);
  const fields = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
  await editor.fill(JSON.stringify({ ...fields, likes: "many" }, null, 2));
  await panel.getByRole("button", { name: "Save" }).click();
  const alert = panel.getByRole("alert");
  await expect.poll(() => alert.textContent()).toMatch(/Invalid value for messages\.likes/);
  await page.screenshot({ path: join(IMAGES, "dashboard-row-edit.png") });
  await editor.fill(JSON.stringify({ ...fields, likes: 42, pinned: true }, null, 2));
  await panel.getByRole("button", { name: "Save" }).click();
  await expect
    .poll(() => panel.getByRole("region", { name: "Row as JSON" }).textContent())
    .toContain('"likes": 42');
  const stored = await host.admin(
    `/v1/deploys/chat/tables/messages/rows/${id}`,
    "GET",
    undefined,
    developerToken,
  );
  expect(stored.json<{ row: Record<string, unknown> }>().row).toMatchObject({ likes: 42, pinned: true });
  await page.screenshot({ path: join(IMAGES, "dashboard-row.png") });
  await page.keyboard.press("Escape");
  await page.waitForURL((url) => !url.search.includes("row="));

  // Insert: the editor starts with the table's required fields and defaults.
  const channels = (
    await host.admin("/v1/deploys/chat/tables/channels/rows?numItems=1", "GET", undefined, developerToken)
  ).json<{ page: Array<{ id: string }> }>();
  await page.getByRole("button", { name: "Insert row" }).click();
  const insertPanel = page.getByRole("complementary", { name: "New row" });
  await insertPanel
    .getByLabel(/Fields as JSON/)
    .fill(JSON.stringify({ channel: channels.page[0]?.id, body: "written in the dashboard" }));
  await insertPanel.getByRole("button", { name: "Insert" }).click();
  await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("121 rows");
  const newest = page.getByRole("complementary", { name: /^Row / });
  await expect.poll(() => newest.textContent()).toContain("written in the dashboard");
  page.once("dialog", (dialog) => void dialog.accept());
  await newest.getByRole("button", { name: "Delete" }).click();
  await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("120 rows");
  const log = host.deployments.logs.recent("chat").filter((line) => line.handler === "dashboard");
  expect(log.map((line) => line.message.replace(/row \S+$/, "row"))).toEqual([
    expect.stringMatching(/^dashboard: developer \S+ updated messages row$/),
    expect.stringMatching(/^dashboard: developer \S+ inserted messages row$/),
    expect.stringMatching(/^dashboard: developer \S+ deleted messages row$/),
  ]);
  await page.context().close();
}, 120_000);

it("keeps storage in the same navigation, reads at phone width, works by keyboard, and signs out", async () => {
  const page = await newPage();
  await signIn(page, "/dashboard/deploys/chat/data");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Storage" }).click();
  await page.waitForURL(/\/dashboard\/deploys\/chat\/storage$/);
  await expect.poll(() => page.locator("tr", { hasText: "text/plain" }).count()).toBe(1);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Data" }).click();
  await page.waitForURL(/\/deploys\/chat\/data$/);

  // "Absent": rows without a value for an optional field, withIndex's eq(pinned, null) on by_pinned
  // (one row was pinned by the edit above).
  await page.goto(`${host.url}/dashboard/deploys/chat/data/messages?index=by_pinned`);
  await page.getByLabel("pinned is absent").check();
  expect(await page.getByLabel("pinned =").isDisabled()).toBe(true);
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForURL(/index=by_pinned&absent\.pinned=$/);
  await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("119 rows");

  // Keyboard: focus the filter's first equality, type, and submit with Enter.
  await page.goto(`${host.url}/dashboard/deploys/chat/data/messages?index=by_likes`);
  const equality = page.getByLabel("likes =");
  await equality.focus();
  await page.keyboard.type("7");
  await page.keyboard.press("Enter");
  await page.waitForURL(/eq\.likes=7/);
  await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("12 rows");

  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(IMAGES, "dashboard-phone.png"), fullPage: true });
  const overflow = (await page.evaluate(
    "document.documentElement.scrollWidth - window.innerWidth",
  )) as number;
  expect(overflow).toBeLessThanOrEqual(0);
  // Every other page fits a phone's width too (wide tables scroll inside their own box).
  for (const path of [
    "",
    "/deploys/chat/data",
    "/deploys/chat/functions",
    "/deploys/chat/logs",
    "/deploys/chat/storage",
    "/deploys/chat/settings",
  ]) {
    await page.goto(`${host.url}/dashboard${path}`);
    await page.getByRole("heading", { level: 1 }).waitFor();
    await page.waitForLoadState("load");
    const wider = (await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")) as number;
    expect({ path, wider }).toEqual({ path, wider: expect.toSatisfy((n: number) => n <= 0) });
  }

  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(/\/dashboard\/login$/);
  await page.goto(`${host.url}/dashboard`);
  expect(page.url()).toContain("/dashboard/login");
  expect(foreign).toEqual([]);
  await page.context().close();
}, 120_000);

it("serves the bundle under hashed names, cached as immutable, compressed, and the shell never cached", async () => {
  const shell = await sendRequest(`${host.url}/dashboard/login`);
  expect(shell.status).toBe(200);
  const page = await newPage();
  await signIn(page);
  const html = await page.content();
  const script = /src="(\/dashboard\/assets\/app-[A-Z0-9]+\.js)"/.exec(html)?.[1] as string;
  const style = /href="(\/dashboard\/assets\/app-[A-Z0-9]+\.css)"/.exec(html)?.[1] as string;
  for (const path of [script, style]) {
    const asset = await sendRequest(`${host.url}${path}`);
    expect(asset.status).toBe(200);
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(asset.headers["content-encoding"]).toBeUndefined();
    const packed = await sendRequest(`${host.url}${path}`, { headers: { "accept-encoding": "br, gzip" } });
    expect(packed.headers["content-encoding"]).toBe("br");
    expect(packed.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(brotliDecompressSync(packed.body).equals(asset.body)).toBe(true);
    expect(packed.body.length).toBeLessThan(asset.body.length);
  }
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
  const page1 = await sendRequest(`${host.url}/dashboard`, {
    headers: { cookie, "accept-encoding": "gzip" },
  });
  expect(page1.headers["cache-control"]).toBe("no-store");

  // The JSON APIs are compressed too; log streams and stored files are sent as they are.
  const bearer = { authorization: `Bearer ${developerToken}`, "accept-encoding": "gzip" };
  const rows = await sendRequest(`${host.url}/v1/deploys/chat/tables/messages/rows?numItems=100`, {
    headers: bearer,
  });
  expect(rows.headers["content-encoding"]).toBe("gzip");
  expect(JSON.parse(gunzipSync(rows.body).toString("utf8")).page).toHaveLength(100);
  const logs = await sendRequest(`${host.url}/v1/deploys/chat/logs`, { headers: bearer });
  expect(logs.headers["content-type"]).toContain("application/x-ndjson");
  expect(logs.headers["content-encoding"]).toBeUndefined();
  const files = (await sendRequest(`${host.url}/v1/deploys/chat/storage`, { headers: bearer })).json<{
    objects: Array<{ key: string }>;
  }>();
  const file = await sendRequest(`${host.url}/v1/deploys/chat/storage/${files.objects[0]?.key}`, {
    headers: bearer,
  });
  expect(file.status).toBe(200);
  expect(file.headers["content-encoding"]).toBeUndefined();

  expect((await sendRequest(`${host.url}/dashboard/assets/app-NOPE.js`)).status).toBe(404);
  expect((await sendRequest(`${host.url}/dashboard/assets/..%2F..%2Fpackage.json`)).status).toBe(404);
  await page.context().close();
}, 60_000);

it("prints how long the first page takes to load on loopback (no timing is asserted)", async () => {
  const page = await newPage();
  await signIn(page);
  const cookies = await page.context().cookies();
  // Cold: a new browser context (an empty cache) with the same session; warm: new pages of that
  // context, the hashed bundle cached as immutable. Each figure is from the navigation's start.
  const cold = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await cold.addCookies(cookies);
  const timings: string[] = [];
  for (const visit of ["cold", "warm 1", "warm 2", "warm 3"]) {
    const fresh = await cold.newPage();
    await fresh.goto(`${host.url}/dashboard`);
    await fresh.getByRole("row", { name: /chat/ }).locator("td").nth(5).getByText("122").waitFor();
    const shown = (await fresh.evaluate("performance.now()")) as number;
    const steps = (await fresh.evaluate(`(() => {
      const nav = performance.getEntriesByType("navigation")[0];
      const done = (test) => performance.getEntriesByType("resource").filter((r) => test.test(r.name))
        .reduce((end, r) => Math.max(end, r.responseEnd), 0);
      return { shell: nav.responseEnd, assets: done(/\\/dashboard\\/assets\\//), load: nav.loadEventEnd,
        list: done(/\\/v1\\/deploys$/), totals: done(/\\/totals$/) };
    })()`)) as Record<string, number>;
    const parts = Object.entries(steps).map(([step, ms]) => `${step} ${ms.toFixed(0)}`);
    timings.push(`${visit}: ${parts.join(", ")}, rows and files shown ${shown.toFixed(0)} ms`);
    await fresh.close();
  }
  console.log(`dashboard first page on loopback (ms from the navigation's start):\n${timings.join("\n")}`);
  await cold.close();
  await page.context().close();
}, 60_000);
