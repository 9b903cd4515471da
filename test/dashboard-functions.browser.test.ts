/**
 * The dashboard's functions and logs pages in a real browser (Debian's Chromium via
 * playwright-core): every handler listed; a query and a mutation run as a guest with their value
 * and usage figures against the limits, and a failing run's code and message; the log followed
 * live (a call made elsewhere appears without reloading) with its level and handler filters and a
 * failure's message; per-handler figures as small charts. Screenshots go to docs/images/. Nothing
 * is loaded from any other origin.
 */
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
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
  const made = await host.admin("/v1/deploys", "POST", {
    id: "chat",
    code: await fixtureCode("dashboard"),
    owner: developer.id,
  });
  expect(made.status, made.text()).toBe(201);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host.dispose();
  expect(foreign).toEqual([]);
});

async function signedInPage(path: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith(host.url) && !url.startsWith("data:") && !url.startsWith("blob:")) foreign.push(url);
  });
  await page.goto(`${host.url}${path}`);
  await page.fill('input[name="token"]', developerToken);
  await Promise.all([
    page.waitForURL((url) => !url.pathname.startsWith("/dashboard/login")),
    page.click('button[type="submit"]'),
  ]);
  return page;
}

/** The usage table's row of `figure`: [used, limit, share]. */
async function usageRow(page: Page, figure: string): Promise<string[]> {
  const row = page.getByRole("table", { name: "Usage" }).getByRole("row", { name: new RegExp(`^${figure}`) });
  return (await row.getByRole("cell").allTextContents()).map((text) => text.trim());
}

it("lists every handler and runs a mutation and a query as a guest, with usage and errors", async () => {
  const page = await signedInPage("/dashboard/deploys/chat/data");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Functions" }).click();
  await page.waitForURL(/\/dashboard\/deploys\/chat\/functions$/);
  const list = page.getByRole("table", { name: "Functions of chat" });
  // The list arrives after the page: poll until it is shown.
  for (const name of ["count", "latest", "mine", "post", "seed"])
    await expect.poll(() => list.getByRole("button", { name, exact: true }).count()).toBe(1);

  await list.getByRole("button", { name: "post", exact: true }).click();
  await expect(page.getByRole("combobox", { name: "Function", exact: true }).inputValue()).resolves.toBe(
    "mutation:post",
  );
  await page.getByLabel("A guest").check();
  await page.getByLabel("Guest name").fill("tester");
  await page
    .getByLabel("Arguments (JSON)")
    .fill('{"channel": "general", "body": "hello from the dashboard"}');
  await page.getByRole("button", { name: "Run", exact: true }).click();
  await page.getByRole("table", { name: "Usage" }).waitFor();
  expect(await page.locator("pre.result-value").textContent()).toMatch(/^"[A-Za-z0-9_-]+"$/);
  expect(await usageRow(page, "Writes")).toEqual(["2", "no limit", "-"]);
  const wall = await usageRow(page, "Wall time");
  expect(wall[1]).toBe("15000.0 ms");
  expect(wall[2]).toMatch(/^\d+(\.\d)?%$/);

  await page.getByRole("combobox", { name: "Function", exact: true }).selectOption("query:mine");
  await page.getByLabel("Arguments (JSON)").fill("{}");
  await page.getByRole("button", { name: "Run", exact: true }).click();
  await page.locator("pre.result-value", { hasText: "hello from the dashboard" }).waitFor();
  expect(await page.locator("pre.result-value").textContent()).toContain('"author": "guest:tester"');
  expect(await usageRow(page, "Rows returned")).toEqual(["1", "1,000", "0.1%"]);
  expect((await usageRow(page, "Rows read"))[1]).toBe("5,000");
  expect((await usageRow(page, "Bytes read"))[1]).toBe("4.0 MiB");
  expect((await usageRow(page, "CPU time"))[1]).toBe("1000.0 ms");
  await page.screenshot({ path: join(IMAGES, "dashboard-functions.png"), fullPage: true });

  // A failing run: the handler's error with its code and message, and what it used before failing.
  await page.getByRole("combobox", { name: "Function", exact: true }).selectOption("mutation:post");
  await page.getByLabel("Arguments (JSON)").fill('{"channel": "general", "body": "  "}');
  await page.getByRole("button", { name: "Run", exact: true }).click();
  const alert = page.getByRole("alert");
  await alert.waitFor();
  expect(await alert.textContent()).toBe("bad_request: A message needs a body.");
  await page.getByRole("table", { name: "Usage" }).waitFor();
  // An unknown account is refused by the host, with its code.
  await page.getByLabel("An account").check();
  await page.getByLabel("Email").fill("nobody@example.com");
  await page.getByRole("button", { name: "Run", exact: true }).click();
  await page.getByRole("alert").filter({ hasText: "not_found" }).waitFor();
  expect(await page.getByRole("alert").textContent()).toContain(
    "No account nobody@example.com in deployment chat",
  );
  await page.context().close();
}, 120_000);

it("follows the log live with level and handler filters, and charts each handler's last hour", async () => {
  await host.call("chat", "mutation", "seed", { channels: ["general"], perChannel: 3 });
  const page = await signedInPage("/dashboard/deploys/chat/logs");
  await page.getByRole("status").filter({ hasText: "Following" }).waitFor();
  const log = page.getByRole("table", { name: "Log of chat" });
  await log.getByRole("row", { name: /mutation seed ok/ }).waitFor();

  // A call made elsewhere appears without reloading, with a failure's message.
  await host.call("chat", "query", "mine");
  const failed = log.getByRole("row", { name: /query mine unauthorized/ });
  await failed.waitFor();
  expect(await failed.textContent()).toContain("Sign in required: this handler needs an identity");
  await host.call("chat", "query", "latest");
  await log.getByRole("row", { name: /query latest ok/ }).waitFor();

  // Level: warnings and errors only (a failed call's line is a warning).
  await page.getByRole("combobox", { name: "Level", exact: true }).selectOption("warn");
  await expect(log.getByRole("row", { name: /query latest ok/ }).count()).resolves.toBe(0);
  await expect(failed.count()).resolves.toBe(1);
  await page.getByRole("combobox", { name: "Level", exact: true }).selectOption("");
  // Handler: only `latest`'s lines, also those arriving now.
  await page.getByRole("combobox", { name: "Handler", exact: true }).selectOption("latest");
  await expect(log.getByRole("row", { name: /mutation seed ok/ }).count()).resolves.toBe(0);
  await host.call("chat", "query", "latest");
  await expect
    .poll(() => log.getByRole("row", { name: /query latest ok/ }).count(), { timeout: 10_000 })
    .toBe(2);
  await page.getByRole("combobox", { name: "Handler", exact: true }).selectOption("");

  // Per-handler figures: calls, failures, p50/p99 and the largest share, each with a chart.
  const stats = page.getByRole("table", { name: "Handler figures" });
  const latest = stats.locator('tr[data-handler="latest"]');
  await expect.poll(() => latest.locator("td").first().textContent(), { timeout: 15_000 }).toMatch(/^2/);
  await expect(latest.getByRole("img", { name: "Calls of latest per minute" }).count()).resolves.toBe(1);
  await expect(
    latest.getByRole("img", { name: "p50 and p99 wall time of latest per minute" }).count(),
  ).resolves.toBe(1);
  const mine = stats.locator('tr[data-handler="mine"]');
  expect(await mine.locator("td").nth(1).textContent()).toMatch(/^1/);
  await page.screenshot({ path: join(IMAGES, "dashboard-logs.png"), fullPage: true });
  await page.context().close();
}, 120_000);
