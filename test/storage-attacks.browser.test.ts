/**
 * The crafted attack files are real: served as they are (by a bare server on loopback, with the type
 * a careless host would give them, or none), Chromium runs their script. The platform refuses every
 * one of them at upload, and serves a benign SVG inline without running anything.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./helpers/browser.js";
import { startUploadHost, type UploadHost } from "./helpers/upload-host.js";

const ATTACKS = join(import.meta.dirname, "..", "fixtures", "files", "attacks");

/** The attack files Chromium runs when served as-is, with the type they are served with ("" = none). */
const RUNS_IN_CHROMIUM: Array<[string, string]> = [
  ["svg-script.svg", "image/svg+xml"],
  ["svg-onload-newlines.svg", "image/svg+xml"],
  ["svg-comment-led.svg", "image/svg+xml"],
  ["svg-entity.svg", "image/svg+xml"],
  ["svg-attlist-default.svg", "image/svg+xml"],
  ["svg-foreignobject.svg", "image/svg+xml"],
  ["svg-iso-2022-jp.svg", "image/svg+xml"],
  ["svg-utf16le-bom.svg", "image/svg+xml"],
  ["svg-xhtml-prefixed-script.svg", "image/svg+xml"],
  ["svg-href-javascript.svg", "image/svg+xml"],
  ["svg-href-entities.svg", "image/svg+xml"],
  ["svg-animate-href.svg", "image/svg+xml"],
  ["xhtml.xml", "application/xml"],
  ["xml-xhtml-script.xml", "application/xml"],
  ["html-anchor.txt", ""],
  ["html-comment-led.txt", ""],
  ["html-paragraph.txt", ""],
  ["html-whitespace-upper.txt", ""],
];

let browser: Browser;
let bare: Server;
let files: UploadHost;

beforeAll(async () => {
  browser = await launchChromium();
  bare = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const type = url.searchParams.get("type");
    if (type) response.setHeader("content-type", type);
    const name = decodeURIComponent(url.pathname.slice(1));
    if (!readdirSync(ATTACKS).includes(name)) {
      response.statusCode = 404;
      response.end();
      return;
    }
    response.end(readFileSync(join(ATTACKS, name)));
  });
  await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
  files = await startUploadHost();
});
afterAll(async () => {
  await browser?.close();
  bare?.close();
  await files?.host.dispose();
});

/**
 * Opens `url` and, once it has loaded, clicks its corner (where the link fixtures draw their target);
 * true on the first dialog.
 */
async function scriptRuns(url: string): Promise<boolean> {
  const page = await browser.newPage();
  try {
    const dialog = new Promise<boolean>((resolve) => {
      page.on("dialog", (shown) => {
        resolve(true);
        shown.dismiss().catch(() => {});
      });
      setTimeout(() => resolve(false), 30_000);
    });
    await page.goto(url, { waitUntil: "commit" });
    await page.waitForLoadState("load");
    await page.mouse.click(5, 5).catch(() => {});
    return await dialog;
  } finally {
    await page.close();
  }
}

describe("attack files", () => {
  it("run script in Chromium when served as they are", async () => {
    const { port } = bare.address() as AddressInfo;
    for (const [name, type] of RUNS_IN_CHROMIUM) {
      const url = `http://127.0.0.1:${port}/${name}${type ? `?type=${encodeURIComponent(type)}` : ""}`;
      const started = performance.now();
      const runs = await scriptRuns(url);
      console.log(
        `${name} served as ${type || "(no type)"}: script ran ${runs} (${Math.round(performance.now() - started)} ms)`,
      );
      expect([name, runs]).toEqual([name, true]);
    }
  }, 600_000);

  it("are all refused by the platform, declared as SVG, XML, plain text or an image", async () => {
    for (const name of readdirSync(ATTACKS).sort()) {
      for (const type of ["image/svg+xml", "application/xml", "text/plain", "image/png"]) {
        const response = await files.upload(readFileSync(join(ATTACKS, name)), type);
        expect([name, type, response.status]).toEqual([name, type, 415]);
      }
    }
  });

  it("a benign SVG downloaded from the platform is shown inline as SVG", async () => {
    const svg =
      '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><rect width="20" height="20"/></svg>';
    const stored = await files.upload(svg, "image/svg+xml", true);
    expect(stored.status).toBe(201);
    const page = await browser.newPage();
    try {
      const response = await page.goto(stored.json<{ url: string }>().url);
      expect(response?.headers()["content-type"]).toBe("image/svg+xml");
      expect(await page.locator("rect").count()).toBe(1);
    } finally {
      await page.close();
    }
  });

  it("Markdown that opens with HTML fragments is stored, and the browser shows it as text, not as a page", async () => {
    const markdown = '<p align="center"><img src="x" onerror="alert(document.domain)"></p>\n\n# Title\n';
    const stored = await files.upload(markdown, "text/markdown; charset=utf-8", true);
    expect(stored.status).toBe(201);
    const page = await browser.newPage();
    try {
      const response = await page.goto(stored.json<{ url: string }>().url).catch((error: Error) => error);
      if (response instanceof Error) {
        expect(response.message).toContain("Download is starting");
      } else {
        expect(response?.headers()["content-type"]).toBe("text/markdown;charset=utf-8");
        expect(await page.locator("img").count()).toBe(0);
        expect(await page.locator("body").textContent()).toContain("onerror");
      }
    } finally {
      await page.close();
    }
  });
});
