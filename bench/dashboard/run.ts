/**
 * bench/dashboard: how long the dashboard's first page (the deployments list with its row and file
 * totals) takes in headless Chromium on loopback, from the navigation's start until the totals are
 * shown, with an empty browser cache (cold) and with the hashed bundle cached (warm). Baseline,
 * interleaved in the same rounds: the same browser loading the sign-in page (server-rendered, no
 * script), so a busy machine moves both. Also the host's own time for the page's requests, sent
 * one after another over HTTP without a browser. Not a test: prints numbers and ratios.
 *
 *   npm run bench:dashboard
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium } from "playwright-core";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { sendRequest } from "../../dist/cli/http.js";
import { startHost } from "../../dist/host/host.js";
import { percentile } from "../lib/percentile.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const DEPLOYMENTS = 5;

const median = (values: number[]) => percentile(values, 50);

function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
}

/** The little of the DOM the wait below reads. */
interface PageDocument {
  querySelector(selector: string): { textContent: string | null } | null;
  querySelectorAll(selector: string): { length: number };
}

/** Milliseconds from the navigation's start until `url` shows every deployment's totals. */
async function listShown(context: BrowserContext, url: string): Promise<number> {
  const page = await context.newPage();
  await page.goto(url);
  // Runs in the page, whose CSP allows no string eval; this file is compiled without DOM types.
  // The page itself reads the clock the moment the list is whole (a read after the wait would add
  // a round trip to the browser).
  const shown = await page.waitForFunction(
    (count) => {
      const scope = globalThis as unknown as { document: PageDocument; performance: { now(): number } };
      const doc = scope.document;
      const table = doc.querySelector('table[aria-label="Deployments"]');
      const whole =
        doc.querySelectorAll('table[aria-label="Deployments"] tbody tr').length === count &&
        !table?.textContent?.includes("…");
      return whole ? scope.performance.now() : false;
    },
    DEPLOYMENTS,
    { polling: "raf" },
  );
  const ms = (await shown.jsonValue()) as number;
  await page.close();
  return ms;
}

/** Milliseconds from the navigation's start until the sign-in page's load event. */
async function signInPageLoaded(context: BrowserContext, url: string): Promise<number> {
  const page = await context.newPage();
  await page.goto(url);
  const ms = (await page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")) as number;
  await page.close();
  return ms;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-dashboard-"));
  const adminToken = randomBytes(12).toString("hex");
  const host = await startHost({
    requestQuota: false,
    data: join(dir, "host"),
    port: 0,
    domain: "localhost",
    adminToken,
    logDestination: false,
  });
  const admin = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  const developer = (
    await sendRequest(`${host.url}/v1/developers`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ name: "Bench", email: "bench@example.com" }),
    })
  ).json<{ id: string; token: string }>();
  const { code } = await bundleCapsule("fixtures/dashboard");
  for (let i = 0; i < DEPLOYMENTS; i++)
    await sendRequest(`${host.url}/v1/deploys`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ id: `app${i}`, code, owner: developer.id }),
    });

  const browser = await launch();
  const signIn = await browser.newContext();
  const page = await signIn.newPage();
  await page.goto(`${host.url}/dashboard`);
  await page.fill('input[name="token"]', developer.token);
  await Promise.all([page.waitForURL(/\/dashboard$/), page.click('button[type="submit"]')]);
  const cookies = await signIn.cookies();
  await signIn.close();

  const baseline: number[] = [];
  const cold: number[] = [];
  const warm: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const context = await browser.newContext();
    await context.addCookies(cookies);
    baseline.push(await signInPageLoaded(context, `${host.url}/dashboard/login`));
    cold.push(await listShown(context, `${host.url}/dashboard`));
    warm.push(await listShown(context, `${host.url}/dashboard`));
    await context.close();
  }
  await browser.close();

  // The host alone: the page's requests in the order the browser sends them, over one connection.
  const session = { authorization: `Bearer ${developer.token}`, "accept-encoding": "br, gzip" };
  const cookie = cookies.map((c) => `${c.name}=${c.value}`).join("; ");
  const shell = await sendRequest(`${host.url}/dashboard`, { headers: { cookie } });
  const assets = [...shell.text().matchAll(/\/dashboard\/assets\/[\w.-]+/g)].map((m) => m[0]);
  const served: number[] = [];
  for (let round = 0; round < 30; round++) {
    const start = performance.now();
    await sendRequest(`${host.url}/dashboard`, { headers: { cookie, "accept-encoding": "br, gzip" } });
    await Promise.all(assets.map((path) => sendRequest(`${host.url}${path}`, { headers: session })));
    await sendRequest(`${host.url}/v1/deploys`, { headers: session });
    await Promise.all(
      Array.from({ length: DEPLOYMENTS }, (_, i) =>
        sendRequest(`${host.url}/v1/deploys/app${i}/totals`, { headers: session }),
      ),
    );
    served.push(performance.now() - start);
  }
  await host.close();
  await rm(dir, { recursive: true, force: true });

  const b = median(baseline);
  console.log(`dashboard first page, ${DEPLOYMENTS} deployments, ${ROUNDS} interleaved rounds (medians):`);
  console.log(`  sign-in page (no script), load event:      ${b.toFixed(0)} ms`);
  console.log(
    `  deployments list shown, empty cache:       ${median(cold).toFixed(0)} ms (${(median(cold) / b).toFixed(1)}x)`,
  );
  console.log(
    `  deployments list shown, bundle cached:     ${median(warm).toFixed(0)} ms (${(median(warm) / b).toFixed(1)}x)`,
  );
  console.log(`  the host alone (shell, bundle, list, totals over HTTP): ${median(served).toFixed(1)} ms`);
}

await main();
