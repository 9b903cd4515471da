/**
 * The row panel while another row loads, in a real browser (Debian's Chromium via playwright-core):
 * with row A open, opening row B must not show B's panel with A's data until B's answer comes.
 * Before, the panel kept A's row under B's selection, and an Edit clicked then filled the editor
 * with A's fields, which Save then wrote to B. Row B's answer is held by the test, not timed.
 */
import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchChromium } from "./helpers/browser.js";
import { danasDeployment } from "./helpers/dashboard.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let browser: Browser;
let developerToken: string;

beforeAll(async () => {
  host = await startTestHost();
  developerToken = (await danasDeployment(host, "dashboard", "chat")).token;
  const seeded = await host.call("chat", "mutation", "seed", { channels: ["general"], perChannel: 2 });
  expect(seeded.status, seeded.text()).toBe(200);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host.dispose();
});

/** A message's body as the host has it. */
async function bodyOf(id: string): Promise<string> {
  const answer = await host.admin(
    `/v1/deploys/chat/tables/messages/rows/${id}`,
    "GET",
    undefined,
    developerToken,
  );
  return answer.json<{ row: { body: string } }>().row.body;
}

async function signIn(page: Page, path: string): Promise<void> {
  await page.goto(`${host.url}${path}`);
  await page.fill('input[name="token"]', developerToken);
  await Promise.all([
    page.waitForURL((url) => !url.pathname.startsWith("/dashboard/login")),
    page.click('button[type="submit"]'),
  ]);
}

it("shows no panel for row B until B's own row arrives, then B's fields to edit", async () => {
  const page = await browser.newPage();
  await signIn(page, "/dashboard/deploys/chat/data/messages");
  const rows = page.getByRole("table", { name: "Rows of messages" }).locator("tbody tr");
  await expect.poll(() => rows.count()).toBe(2);
  const openButton = (n: number) => rows.nth(n).getByRole("button", { name: /^Open row / });
  const idOf = async (n: number) =>
    ((await openButton(n).getAttribute("aria-label")) as string).replace("Open row ", "");
  const [a, b] = [await idOf(0), await idOf(1)];
  const bodyOfA = await bodyOf(a);

  await openButton(0).click();
  const panelA = page.getByRole("complementary", { name: `Row ${a}` });
  await expect.poll(() => panelA.getByRole("region", { name: "Row as JSON" }).textContent()).toContain(a);

  // Hold the first read of row B until the page has shown whatever it shows meanwhile.
  let held: Route | undefined;
  const requested = new Promise<void>((resolve) =>
    page.route(`**/v1/deploys/chat/tables/messages/rows/${b}`, (route) => {
      if (held) return void route.continue();
      held = route;
      resolve();
    }),
  );
  await openButton(1).click();
  await requested;
  await expect.poll(() => rows.nth(1).getAttribute("aria-selected")).toBe("true");
  expect(await page.getByRole("complementary").count()).toBe(0);
  expect(await page.getByRole("button", { name: "Edit" }).count()).toBe(0);

  await held?.continue();
  const panelB = page.getByRole("complementary", { name: `Row ${b}` });
  await expect.poll(() => panelB.getByRole("region", { name: "Row as JSON" }).textContent()).toContain(b);
  await panelB.getByRole("button", { name: "Edit" }).click();
  const fields = JSON.parse(await panelB.getByLabel(/Fields as JSON/).inputValue()) as { body: string };
  expect(fields.body).toBe(await bodyOf(b));

  // Saved, B is read again with its panel kept in view; A is untouched.
  const editor = panelB.getByLabel(/Fields as JSON/);
  await editor.fill(JSON.stringify({ ...fields, body: "edited B" }));
  await panelB.getByRole("button", { name: "Save" }).click();
  await expect
    .poll(() => panelB.getByRole("region", { name: "Row as JSON" }).textContent())
    .toContain("edited B");
  expect(await bodyOf(b)).toBe("edited B");
  expect(await bodyOf(a)).toBe(bodyOfA);
  await page.close();
}, 60_000);
