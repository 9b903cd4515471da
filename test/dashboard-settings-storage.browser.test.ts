/**
 * The dashboard's storage and settings pages in a real browser (Debian's Chromium via
 * playwright-core): files listed in the app's own navigation with image previews, a download, a
 * delete; settings showing env variable names (never values) and claim status, restricting the app
 * to approved emails (which the app then enforces), and deleting the deployment only once its id
 * is typed. Screenshots go to docs/images/. Nothing is loaded from any other origin.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { crc32, deflateSync } from "node:zlib";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { launchChromium } from "./helpers/browser.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let browser: Browser;
let developerToken: string;
let accountToken: string;
const IMAGES = join(process.cwd(), "docs", "images");
const foreign: string[] = [];

/** A valid PNG of `size` x `size` pixels, a diagonal gradient (so a preview is visibly an image). */
function gradientPng(size: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour
  const rows = Array.from({ length: size }, (_, y) =>
    Buffer.concat([
      Buffer.from([0]),
      ...Array.from({ length: size }, (_, x) =>
        Buffer.from([(40 + (x * 200) / size) | 0, 90, (200 - (y * 150) / size) | 0]),
      ),
    ]),
  );
  return Buffer.concat([
    Buffer.from("89504e470d0a1a0a", "hex"),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

async function upload(body: string | Buffer, contentType: string, visibility = "private"): Promise<string> {
  const stored = await sendRequest(
    `${host.deploymentUrl("chat")}/storage${visibility === "public" ? "?public=true" : ""}`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${accountToken}`, "content-type": contentType },
      body,
    },
  );
  expect(stored.status, stored.text()).toBe(201);
  return stored.json<{ key: string }>().key;
}

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
    env: { STRIPE_SECRET: "sk_live_never_shown", MAIL_FROM: "team@example.com" },
  });
  expect(made.status, made.text()).toBe(201);
  const account = await host.admin("/v1/deploys/chat/sessions", "POST", { email: "ada@example.com" });
  accountToken = account.json<{ token: string }>().token;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host.dispose();
});

/** An anonymous call of the app's one mutation. */
function seedOne() {
  return host.call("chat", "mutation", "seed", { channels: ["general"], perChannel: 1 });
}

async function signedInPage(path: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
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

it("lists files in the app's navigation with image previews, downloads one and deletes one", async () => {
  const png = gradientPng(48);
  const photo = await upload(png, "image/png", "public");
  const notes = await upload("meeting notes\n", "text/plain");
  const archive = await upload(Buffer.from("PK\x03\x04 zip bytes"), "application/zip");
  const page = await signedInPage("/dashboard/deploys/chat/data");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Storage" }).click();
  await page.waitForURL(/\/dashboard\/deploys\/chat\/storage$/);
  const table = page.getByRole("table", { name: "Files of chat" });
  await expect.poll(() => table.locator("tbody tr").count()).toBe(3);
  expect(await page.getByText("3 files").count()).toBe(1);

  // The image's preview is the image itself, loaded through the operator API; others have none.
  const preview = page.getByRole("img", { name: `Preview of ${photo}` });
  await expect
    .poll(() =>
      preview.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth).catch(() => 0),
    )
    .toBe(48);
  expect(await table.getByRole("img").count()).toBe(1);
  // Not a same-origin blob: URL, where an SVG opened on its own would run as the dashboard.
  expect(await preview.getAttribute("src")).toMatch(/^data:image\/png;base64,/);
  const cells = await table.locator("tr", { hasText: notes }).locator("td").allTextContents();
  expect(cells.slice(1, 6)).toEqual([notes, "private", "14 B", "text/plain", "ada@example.com"]);
  await page.screenshot({ path: join(IMAGES, "dashboard-storage.png") });

  // Downloads arrive as files with the stored bytes, private ones included.
  for (const [key, bytes] of [
    [notes, Buffer.from("meeting notes\n")],
    [photo, png],
  ] as const) {
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: `Download ${key}` }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(key.split("/")[1]);
    expect((await readFile(await download.path())).equals(bytes)).toBe(true);
  }

  await page.getByRole("button", { name: `Delete ${archive}` }).click();
  await expect.poll(() => table.locator("tbody tr").count()).toBe(2);
  expect((await host.admin(`/v1/deploys/chat/storage/${archive}`, "GET")).status).toBe(404);
  expect(foreign).toEqual([]);
  await page.context().close();
}, 120_000);

it("shows settings, restricts the app to approved emails, and deletes only after the id is typed", async () => {
  const page = await signedInPage("/dashboard/deploys/chat/data");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Settings" }).click();
  await page.waitForURL(/\/dashboard\/deploys\/chat\/settings$/);
  const names = page.getByRole("list", { name: "Env variable names" }).getByRole("listitem");
  await expect.poll(() => names.allTextContents()).toEqual(["MAIL_FROM", "STRIPE_SECRET"]);
  expect(await page.content()).not.toContain("sk_live_never_shown");
  expect(await page.getByText("Owned by").count()).toBe(1);

  expect((await seedOne()).status).toBe(200);
  await page.getByRole("checkbox", { name: /Restricted/ }).check();
  await page.getByLabel("Approved emails (one a line)").fill("Ada@Example.com\nbob@example.com");
  await page.getByRole("button", { name: "Save access" }).click();
  await expect.poll(() => page.getByRole("status").textContent()).toBe("Saved.");
  await expect
    .poll(() => page.getByLabel("Approved emails (one a line)").inputValue())
    .toBe("ada@example.com\nbob@example.com");
  const shown = (await host.admin("/v1/deploys/chat", "GET")).json<{
    restricted: boolean;
    approved: string[];
  }>();
  expect(shown).toMatchObject({ restricted: true, approved: ["ada@example.com", "bob@example.com"] });
  // The app now refuses anyone not signed in with an approved account.
  const anonymous = await seedOne();
  expect(anonymous.status).toBe(401);
  await page.screenshot({ path: join(IMAGES, "dashboard-settings.png"), fullPage: true });

  // A bad email is refused with the host's message, and nothing changes.
  await page.getByLabel("Approved emails (one a line)").fill("not-an-email");
  await page.getByRole("button", { name: "Save access" }).click();
  await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/^bad_request: /);
  expect((await host.admin("/v1/deploys/chat", "GET")).json<{ approved: string[] }>().approved).toHaveLength(
    2,
  );

  const remove = page.getByRole("button", { name: "Delete chat" });
  expect(await remove.isDisabled()).toBe(true);
  await page.getByLabel("Type chat to confirm").fill("chat-typo");
  expect(await remove.isDisabled()).toBe(true);
  expect((await host.admin("/v1/deploys/chat", "GET")).status).toBe(200);
  await page.getByLabel("Type chat to confirm").fill("chat");
  await remove.click();
  await page.waitForURL(/\/dashboard$/);
  await expect.poll(() => page.getByText("No deployments yet").count()).toBe(1);
  expect((await host.admin("/v1/deploys/chat", "GET")).status).toBe(404);
  expect(foreign).toEqual([]);
  await page.context().close();
}, 120_000);
