/**
 * The documented batched-ingest pattern (docs/capsules.md "Custom endpoints") (fixture `ingest`): secret and page checks, no double counting
 * when a page repeats, all-or-nothing pages, at most two index scans and two writes per item, and
 * the external caller surviving a dev server killed and restarted mid-run with exact final counts.
 */
import { spawn } from "node:child_process";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { sourcePage } from "../fixtures/ingest/caller.js";
import { splitEndpointAnswer } from "../sdk/protocol/index.js";
import { type CliProcess, freePort, startCli } from "./helpers/cli.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

const SECRET = "ingest-secret-123";
let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
  expect(
    (await host.deployCode("ingest", await fixtureCode("ingest"), { INGEST_SECRET: SECRET })).status,
  ).toBe(201);
});
afterAll(() => host.dispose());

const ingest = (page: string | number, body: unknown, authorization: string | null = `Bearer ${SECRET}`) =>
  sendRequest(`${host.deploymentUrl("ingest")}/ingest?page=${page}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });

const totals = async () =>
  (await host.call("ingest", "query", "totals")).json<{
    value: { days: [string, number][]; total: number };
  }>().value;

describe("ingest endpoint", () => {
  it("refuses a missing or wrong secret with 401 and bad pages with 400", async () => {
    expect((await ingest(1, { items: [] }, null)).status).toBe(401);
    expect((await ingest(1, { items: [] }, "Bearer nope")).status).toBe(401);
    expect((await ingest(1, { items: [] }, SECRET)).status).toBe(401);
    for (const page of ["0", "-1", "1.5", "abc", "", "9007199254740993"]) {
      const response = await ingest(page, { items: [] });
      expect(response.status, `page=${page}`).toBe(400);
    }
    const missing = await sendRequest(`${host.deploymentUrl("ingest")}/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}` },
      body: "{}",
    });
    expect(missing.status).toBe(400);
    expect(missing.text()).not.toContain(SECRET);
  });

  it("inserts a page once: repeating it counts nothing twice", async () => {
    const page1 = sourcePage(1, 20, 50);
    expect((await ingest(1, page1)).json()).toEqual({ inserted: 20, nextPage: 2 });
    const before = await totals();
    expect(before.total).toBe(20);
    expect((await ingest(1, page1)).json()).toEqual({ inserted: 0, nextPage: 2 });
    expect(await totals()).toEqual(before);
    expect((await ingest(3, sourcePage(3, 20, 50))).json()).toEqual({ inserted: 10, nextPage: null });
  });

  it("leaves neither rows nor counts when the handler throws midway", async () => {
    const before = await totals();
    const events = (await host.call("ingest", "query", "eventCount")).json<{ value: number }>().value;
    const page = sourcePage(2, 20, 50);
    page.items[5] = { ...page.items[5], at: "not a time" } as (typeof page.items)[number];
    const failed = await ingest(2, page);
    expect(failed.status).toBe(500);
    expect(failed.json<{ error: { code: string; message: string } }>().error).toEqual({
      code: "handler_error",
      message: 'Uncaught Error: invalid timestamp "not a time"',
    });
    expect(await totals()).toEqual(before);
    expect((await host.call("ingest", "query", "eventCount")).json<{ value: number }>().value).toBe(events);
  });

  it("uses at most two index scans and two writes per item", async () => {
    const page = sourcePage(1, 30, 30);
    const fresh = page.items.map((item) => ({ ...item, externalId: `budget-${item.externalId}` }));
    const request = {
      method: "POST",
      path: "/ingest",
      headers: [["authorization", `Bearer ${SECRET}`]] as [string, string][],
      query: [["page", "1"]] as [string, string][],
      bodyBase64: Buffer.from(JSON.stringify({ items: fresh, hasMore: false })).toString("base64"),
    };
    const result = await host.deployments.callEndpoint("ingest", "ingest", request, null);
    expect(JSON.parse(splitEndpointAnswer(result.valueJson)?.body ?? "")).toEqual({
      inserted: 30,
      nextPage: null,
    });
    expect(result.usage.indexScans).toBeLessThanOrEqual(2 * 30);
    expect(result.usage.writes).toBeLessThanOrEqual(2 * 30);
  });
});

describe("the external caller across a dev server restart", () => {
  let dir: string;
  let dev: CliProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "platform-ingest-"));
    await cp("fixtures/ingest", join(dir, "app"), { recursive: true });
    await writeFile(join(dir, "app", ".env.platform.server"), `INGEST_SECRET=${SECRET}\n`);
  });
  afterAll(async () => {
    await dev?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("ends with counts equal to the source exactly, nothing lost, nothing doubled", async () => {
    const port = await freePort();
    const args = ["dev", join(dir, "app"), "--port", String(port), "--data", join(dir, "data")];
    dev = startCli(args);
    await dev.waitFor(/platform dev: serving/);
    const TOTAL = 600;
    const caller = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "fixtures/ingest/caller.ts",
        `http://localhost:${port}`,
        SECRET,
        String(TOTAL),
        "10",
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    caller.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    caller.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const finished = new Promise<number | null>((resolve) => caller.on("close", resolve));
    while (!/page 8:/.test(output)) await new Promise((resolve) => setTimeout(resolve, 20));
    dev.child.kill("SIGKILL");
    await new Promise((resolve) => dev.child.once("exit", resolve));
    await new Promise((resolve) => setTimeout(resolve, 300));
    dev = startCli(args);
    await dev.waitFor(/platform dev: serving/);
    expect(await finished).toBe(0);
    expect(output).toMatch(/retrying in \d+ ms/);
    expect(output).toContain("done: inserted");
    const result = await sendRequest(`http://localhost:${port}/api/query/totals`, {
      method: "POST",
      body: "{}",
    });
    const value = result.json<{ value: { total: number; days: [string, number][] } }>().value;
    expect(value.total).toBe(TOTAL);
    const expected = new Map<string, number>();
    for (let page = 1; page <= TOTAL / 10; page++) {
      for (const item of sourcePage(page, 10, TOTAL).items) {
        const day = item.at.slice(0, 10);
        expected.set(day, (expected.get(day) ?? 0) + 1);
      }
    }
    expect(value.days).toEqual([...expected.entries()].sort(([a], [b]) => a.localeCompare(b)));
    const events = await sendRequest(`http://localhost:${port}/api/query/eventCount`, {
      method: "POST",
      body: "{}",
    });
    expect(events.json()).toEqual({ value: TOTAL });
  }, 120_000);
});
