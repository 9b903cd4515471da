/**
 * The React hooks on a live query that fails, in Debian's Chromium: `useQuery` and
 * `usePaginatedQuery` throw the query's error to the error boundary (also on a page that joins
 * while another client holds the failing subscription), and after the query recovers, a boundary
 * that resets renders the value, which then stays live.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildClientApp } from "../cli/client-build.js";
import { createClient, type PlatformClient } from "../sdk/client/node.js";
import { launchChromium } from "./helpers/browser.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let browser: Browser;
let out: string;
let watcher: PlatformClient;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), "platform-client-build-"));
  expect(await buildClientApp("fixtures/live-errors", out)).toMatch(/main\.tsx$/);
  host = await startTestHost({
    devDeployment: "dev",
    devClientDirs: [out, join("fixtures", "live-errors", "client")],
    requestQuota: false,
  });
  await host.deployments.deploy("dev", { code: await fixtureCode("live-errors") });
  browser = await launchChromium();
});
afterAll(async () => {
  watcher?.close();
  await browser?.close();
  await host?.dispose();
  await rm(out, { recursive: true, force: true });
});

it("useQuery and usePaginatedQuery throw a failing query's error, and render its value again once it recovers", async () => {
  const url = host.deploymentUrl("dev");
  // Another client keeps both queries subscribed on the host the whole time.
  watcher = createClient(url, { guest: false });
  const outcomes: string[] = [];
  watcher.subscribe(
    "checked",
    { bucket: 1 },
    (texts) => outcomes.push(`value ${JSON.stringify(texts)}`),
    (error) => outcomes.push(`error ${error.code}`),
  );
  const paged = watcher.paginatedQuery("checkedPage", { bucket: 1 }, { initialNumItems: 10 });
  const stopPaged = paged.subscribe(() => {});
  await watcher.mutation("add", { bucket: 1, text: "kept" });
  const boom = (await watcher.mutation("add", { bucket: 1, text: "boom" })) as string;
  expect(outcomes.at(-1)).toBe("error handler_error");

  const context = await browser.newContext();
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  await page.goto(url);
  // A page that joins while the query fails gets the error, not the value from before it failed.
  await page.getByTestId("checked").filter({ hasText: "failed: handler_error" }).waitFor();
  await page.getByTestId("paged").filter({ hasText: "failed: handler_error" }).waitFor();

  await watcher.mutation("remove", { id: boom });
  expect(outcomes.at(-1)).toBe('value ["kept"]');
  await page.getByRole("button", { name: "Retry checked" }).click();
  await page.getByRole("button", { name: "Retry paged" }).click();
  await page.getByTestId("checked").filter({ hasText: "items: kept" }).waitFor();
  await page.getByTestId("paged").filter({ hasText: "Exhausted: kept" }).waitFor();
  // Live again: a new item shows up without a reload.
  await watcher.mutation("add", { bucket: 1, text: "more" });
  await page.getByTestId("checked").filter({ hasText: "items: kept, more" }).waitFor();
  await page.getByTestId("paged").filter({ hasText: "Exhausted: kept, more" }).waitFor();
  expect(pageErrors).toEqual([]);
  stopPaged();
  await context.close();
}, 120_000);
