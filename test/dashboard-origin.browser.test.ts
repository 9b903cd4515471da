/**
 * Dashboard sign-in against a real browser's rules (Debian's Chromium via playwright-core): a page
 * on another site, or on a sibling deployment, that auto-submits the sign-in form with the
 * attacker's token (login CSRF) leaves the victim signed out; a `next` that a browser would read as
 * another site (`/\host`, tabs inside, `//host`) never takes the victim off the control plane.
 */

import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { launchChromium } from "./helpers/browser.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let browser: Browser;
let attacker: Server;
let attackerHost: string;
let scratch: string;
let victimToken: string;
let attackerToken: string;
const landed: string[] = [];

/** An HTML page that signs in with `token` as soon as it loads. */
function autoSignIn(action: string, token: string): string {
  return `<!doctype html><form id="f" method="post" action="${action}">
<input name="token" value="${token}"><input name="next" value="/deploys/dash/storage"></form>
<script>document.getElementById("f").submit()</script>`;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "platform-dash-origin-"));
  host = await startTestHost();
  const victim = (await host.admin("/v1/developers", "POST", { name: "Vic" })).json<{
    id: string;
    token: string;
  }>();
  const mallory = (await host.admin("/v1/developers", "POST", { name: "Mallory" })).json<{ token: string }>();
  victimToken = victim.token;
  attackerToken = mallory.token;
  await host.admin("/v1/deploys", "POST", { id: "dash", code: await fixtureCode("todo"), owner: victim.id });
  attacker = createServer((req, res) => {
    landed.push(req.url ?? "");
    res.setHeader("content-type", "text/html");
    res.end(req.url === "/form" ? autoSignIn(`${host.url}/dashboard/login`, attackerToken) : "landed");
  });
  await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  attackerHost = `127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  // A sibling deployment (same site as the control plane, another origin) serving the same form.
  await mkdir(join(scratch, "server"), { recursive: true });
  await writeFile(
    join(scratch, "server", "index.ts"),
    `import { capsule, endpoint, table, number, text } from "platform/server";
export default capsule({ schema: { items: table({ n: number() }) }, endpoints: {
  form: endpoint({ method: "GET", path: "/form", readOnly: true }, async () =>
    text(${JSON.stringify(autoSignIn(`${host.url}/dashboard/login`, attackerToken))}, { headers: { "content-type": "text/html" } })),
} });
`,
  );
  expect((await host.deployCode("sibling", (await bundleCapsule(scratch)).code)).status).toBe(201);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => attacker?.close(resolve));
  await host.dispose();
  await rm(scratch, { recursive: true, force: true });
});

/** The control plane's session cookie in the page's browser context, if any. */
async function sessionCookie(page: Page): Promise<string | undefined> {
  const cookies = await page.context().cookies(host.url);
  return cookies.find((c) => c.name === "platform_session")?.value;
}

it("a cross-site or sibling page cannot sign the victim in as the attacker", async () => {
  for (const formUrl of [`http://${attackerHost}/form`, `${host.deploymentUrl("sibling")}/form`]) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const answered = page.waitForResponse((r) => r.url() === `${host.url}/dashboard/login`);
    await page.goto(formUrl);
    const response = await answered;
    await page.waitForLoadState();
    console.log(`form at ${formUrl}: sign-in answered ${response.status()}, page at ${page.url()}`);
    expect(response.status(), formUrl).toBe(403);
    expect(await page.content()).toContain("sent from another site");
    expect(await sessionCookie(page), formUrl).toBeUndefined();
    await context.close();
  }
}, 60_000);

it("the dashboard's own sign-in form still works and keeps a same-site next", async () => {
  const page = await browser.newPage();
  await page.goto(`${host.url}/deploys/dash/storage`);
  await page.fill('input[name="token"]', victimToken);
  await Promise.all([page.waitForURL(/\/deploys\/dash\/storage$/), page.click('button[type="submit"]')]);
  expect(await sessionCookie(page)).toBeDefined();
  await page.context().close();
}, 60_000);

it("sign-in never redirects off the site, whatever next a link or the form carries", async () => {
  const offSite = [
    `//${attackerHost}/landed`,
    `/\\${attackerHost}/landed`,
    `/\\\\${attackerHost}/landed`,
    `\\\\${attackerHost}/landed`,
    `/\t/${attackerHost}/landed`,
    `/\n\\${attackerHost}/landed`,
    ` //${attackerHost}/landed`,
    `http://${attackerHost}/landed`,
    `http:${attackerHost}/landed`,
    `/%5C${attackerHost}/landed`,
    `/%2F${attackerHost}/landed`,
  ];
  const context = await browser.newContext();
  const page = await context.newPage();
  const started = Date.now();
  for (const next of offSite) {
    for (const via of ["link", "form"] as const) {
      await page.goto(`${host.url}/dashboard/login?next=${encodeURIComponent(next)}`);
      if (via === "form")
        await page.locator('input[name="next"]').evaluate((input, value) => {
          (input as unknown as { value: string }).value = value;
        }, next);
      await page.fill('input[name="token"]', victimToken);
      await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
      const at = new URL(page.url());
      expect(at.host, `${via} ${JSON.stringify(next)} -> ${page.url()}`).toBe(new URL(host.url).host);
    }
  }
  console.log(`${offSite.length * 2} sign-ins in ${Date.now() - started} ms`);
  await context.close();
  expect(landed.filter((path) => path.startsWith("/landed"))).toEqual([]);
}, 300_000);
