/**
 * The live-app fixture (a capsule with a React client built by esbuild) served the way `platform dev`
 * serves it, driven in Debian's Chromium: two pages as two guests; an item added in one appears in
 * the other without a reload; pagination; an uploaded image rendered; a guest signs in by email
 * code and keeps their items.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32, deflateSync } from "node:zlib";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { buildClientApp } from "../cli/client-build.js";
import { createClient } from "../sdk/client/node.js";
import { launchChromium } from "./helpers/browser.js";
import { emailCode, fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let browser: Browser;
let out: string;

/** A valid PNG of `size` x `size` red pixels. */
function redPng(size: number): Buffer {
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
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(size * 3, Buffer.from([255, 0, 0]))]);
  const pixels = Buffer.concat(Array.from({ length: size }, () => row));
  return Buffer.concat([
    Buffer.from("89504e470d0a1a0a", "hex"),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(pixels)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

const items = (page: Page) => page.getByTestId("item").allTextContents();

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), "platform-client-build-"));
  expect(await buildClientApp("fixtures/live-app", out)).toMatch(/main\.tsx$/);
  host = await startTestHost({
    devDeployment: "dev",
    devClientDirs: [out, join("fixtures", "live-app", "client")],
  });
  await host.deployments.deploy("dev", { code: await fixtureCode("live-app") });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host?.dispose();
  await rm(out, { recursive: true, force: true });
});

it("runs the whole app: live updates across pages, pagination, image upload, guest sign-in", async () => {
  const url = host.deploymentUrl("dev");
  const pageErrors: string[] = [];
  const open = async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(url);
    await page
      .getByTestId("identity")
      .filter({ hasText: /^guest: guest:/ })
      .waitFor();
    return page;
  };
  const a = await open();
  const b = await open();
  expect(await a.getByTestId("identity").textContent()).not.toBe(
    await b.getByTestId("identity").textContent(),
  );

  // An item added in A appears in B without a reload.
  await a.getByLabel("Text").fill("hello from A");
  await a.getByRole("button", { name: "Add" }).click();
  await b.getByTestId("item").filter({ hasText: "hello from A" }).waitFor();

  // Pagination: 7 items, pages of 5, "Load more" fetches the rest.
  const writer = createClient(url);
  for (let i = 1; i <= 6; i++) await writer.mutation("add", { text: `bulk ${i}` });
  writer.close();
  // Waits for the last insert's push, not for a count of 5 (reached at "bulk 4" already: on a busy
  // machine the later pushes came after the count was seen).
  await vi.waitFor(
    async () => expect(await items(b)).toEqual(["bulk 6", "bulk 5", "bulk 4", "bulk 3", "bulk 2"]),
    {
      timeout: 30_000,
      interval: 100,
    },
  );
  await b.getByTestId("status").filter({ hasText: "CanLoadMore" }).waitFor();
  await b.getByRole("button", { name: "Load more" }).click();
  await b.getByTestId("status").filter({ hasText: "Exhausted" }).waitFor();
  expect(await items(b)).toEqual([
    "bulk 6",
    "bulk 5",
    "bulk 4",
    "bulk 3",
    "bulk 2",
    "bulk 1",
    "hello from A",
  ]);

  // Upload an image in A: both pages render it.
  await a.getByLabel("Text").fill("with picture");
  await a.getByLabel("Image").setInputFiles({ name: "red.png", mimeType: "image/png", buffer: redPng(3) });
  await a.getByRole("button", { name: "Add" }).click();
  for (const page of [a, b]) {
    // Rendered: the image element exists, finished loading, and decoded to its real width.
    await page.waitForFunction(
      `(() => { const image = document.querySelector('img[alt="with picture"]'); return image !== null && image.complete && image.naturalWidth === 3; })()`,
    );
  }

  // The guest of A signs in by email code and keeps their items.
  await a.getByTestId("mine").filter({ hasText: "Mine (2)" }).waitFor();
  await a.getByRole("button", { name: "Sign in" }).click();
  await a.getByLabel("Email").fill("ada@example.com");
  await a.getByRole("button", { name: "Send code" }).click();
  await a.getByLabel("Code").fill(await emailCode(host, "ada@example.com"));
  await a.getByRole("button", { name: "Verify" }).click();
  await a.getByTestId("identity").filter({ hasText: "account: ada@example.com" }).waitFor();
  await a.getByText("Signed in as ada@example.com").waitFor();
  await a.getByTestId("mine").filter({ hasText: "Mine (2): hello from A, with picture" }).waitFor();
  // After a reload the stored account token is used again.
  await a.reload();
  await a.getByTestId("identity").filter({ hasText: "account: ada@example.com" }).waitFor();
  await a.getByTestId("mine").filter({ hasText: "Mine (2)" }).waitFor();
  expect(pageErrors).toEqual([]);
}, 120_000);
