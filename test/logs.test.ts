/**
 * ctx.log: structured lines tagged with deployment, handler and request id, bounded per call, with
 * server-only env values redacted; `platform logs` for the dev server and for a hosted deployment
 * (owner only); env values never in the platform's own responses.
 */
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { type CliProcess, freePort, runCli, runCliAsync, startCli, startDev } from "./helpers/cli.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

const SECRET = "s3cr3t-value-42";
let host: TestHost;
let owner: { id: string; token: string };

beforeAll(async () => {
  host = await startTestHost();
  const admin = { authorization: `Bearer ${host.adminToken}`, "content-type": "application/json" };
  owner = (
    await sendRequest(`${host.url}/v1/developers`, { method: "POST", headers: admin, body: "{}" })
  ).json();
  const created = await sendRequest(`${host.url}/v1/deploys`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({
      id: "logs",
      code: await fixtureCode("logs"),
      env: { API_SECRET: SECRET },
      owner: owner.id,
    }),
  });
  expect(created.status).toBe(201);
  expect(created.text()).not.toContain(SECRET);
});
afterAll(() => host.dispose());

type Line = {
  level: string;
  deployment: string;
  handler: string;
  requestId: string;
  message: string;
  fields?: Record<string, unknown>;
  call?: {
    kind: string;
    name: string;
    outcome: string;
    usage: Record<string, number>;
    error?: { message: string; stack?: string };
  };
};

async function hostedLogs(token: string): Promise<{ status: number; lines: Line[] }> {
  const response = await sendRequest(`${host.url}/v1/deploys/logs/logs`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return {
    status: response.status,
    lines:
      response.status === 200
        ? response
            .text()
            .trim()
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l) as Line)
        : [],
  };
}

describe("ctx.log on a hosted deployment", () => {
  it("writes tagged structured lines with env values redacted", async () => {
    expect((await host.call("logs", "mutation", "hit", { n: 7 })).json()).toEqual({ value: 7 });
    const { lines } = await hostedLogs(owner.token);
    const mine = lines.filter((l) => l.handler === "hit" && !l.call);
    expect(mine.map((l) => [l.level, l.message])).toEqual([
      ["info", "hit"],
      ["warn", "careful"],
      ["error", "leaking [redacted]"],
    ]);
    expect(mine[0]).toMatchObject({ deployment: "logs", fields: { n: 7 } });
    expect(mine[1]?.fields).toEqual({ key: "[redacted]" });
    expect(new Set(mine.map((l) => l.requestId)).size).toBe(1);
    // After the handler's own lines, the platform's line with the call's budget figures.
    const call = lines.find((l) => l.handler === "hit" && l.call);
    expect(call).toMatchObject({
      level: "info",
      message: "mutation hit ok",
      requestId: mine[0]?.requestId,
      call: {
        kind: "mutation",
        name: "hit",
        outcome: "ok",
        usage: {
          rowsReturned: 0,
          rowsRead: 0,
          bytesRead: 0,
          rangesRead: 0,
          indexScans: 0,
          writes: 1,
          cpuMs: expect.any(Number),
          wallMs: expect.any(Number),
        },
      },
    });
    expect(JSON.stringify(lines)).not.toContain(SECRET);
    const printed = JSON.stringify(host.logs);
    expect(printed).toContain("leaking [redacted]");
    expect(printed).not.toContain(SECRET);
  });

  it("writes console.log, debug, info, warn and error as lines of the call", async () => {
    expect((await host.call("logs", "mutation", "viaConsole")).json()).toEqual({ value: 4 });
    const { lines } = await hostedLogs(owner.token);
    const mine = lines.filter((l) => l.handler === "viaConsole" && !l.call);
    expect(mine.map((l) => [l.level, l.message])).toEqual([
      ["info", 'plain {"a":1} 2'],
      ["info", "debugging"],
      ["warn", "careful: Error: why"],
      ["error", "failed null"],
    ]);
    const call = lines.find((l) => l.handler === "viaConsole" && l.call);
    expect(call?.requestId).toBe(mine[0]?.requestId);
  });

  it("bounds the lines of one call", async () => {
    await host.call("logs", "mutation", "chatty");
    const { lines } = await hostedLogs(owner.token);
    const chatty = lines.filter((l) => l.handler === "chatty" && !l.call);
    expect(chatty).toHaveLength(101);
    expect(chatty.at(-1)).toMatchObject({
      level: "warn",
      message: expect.stringContaining("log limit reached"),
    });
  });

  it("bounds the characters of one call's lines, cutting long messages", async () => {
    expect((await host.call("logs", "mutation", "wordy")).json()).toEqual({ value: 20 });
    const { lines } = await hostedLogs(owner.token);
    const wordy = lines.filter((l) => l.handler === "wordy" && !l.call);
    // Each line keeps 4,096 + 16,011 characters: 13 fit in 256 KiB, the notice comes 14th.
    expect(wordy).toHaveLength(14);
    expect(wordy[0]?.message).toBe("w".repeat(LIMITS.logMessageChars));
    expect(wordy.at(-1)).toMatchObject({
      level: "warn",
      message: `log limit reached: further lines of this call are dropped (${LIMITS.logCharsPerHandler} characters per call)`,
    });
  });

  it("never puts env values in the platform's responses", async () => {
    const failed = await host.call("logs", "mutation", "fail");
    expect(failed.json()).toEqual({
      error: { code: "handler_error", message: "Uncaught Error: bad secret [redacted]" },
    });
    const { lines } = await hostedLogs(owner.token);
    const failure = lines.find((l) => l.handler === "fail" && l.call)?.call;
    expect(failure?.outcome).toBe("handler_error");
    // The owner reads the message; a hosted deployment has no source map, so no stack.
    expect(failure?.error).toEqual({ message: "Uncaught Error: bad secret [redacted]" });
    // The host's own log keeps the tenant's text out.
    expect(JSON.stringify(host.logs)).not.toContain("bad secret");
    expect((await host.call("logs", "mutation", "echoEnv")).json()).toEqual({ value: ["API_SECRET"] });
    const admin = { authorization: `Bearer ${host.adminToken}` };
    for (const path of ["/v1/deploys", "/v1/deploys/logs"]) {
      const response = await sendRequest(`${host.url}${path}`, { headers: admin });
      expect(response.text()).not.toContain(SECRET);
      expect(JSON.stringify(response.headers)).not.toContain(SECRET);
    }
  });

  it("shows logs to the owner and the operator only", async () => {
    expect((await hostedLogs(host.adminToken)).status).toBe(200);
    const admin = { authorization: `Bearer ${host.adminToken}`, "content-type": "application/json" };
    const stranger = (
      await sendRequest(`${host.url}/v1/developers`, { method: "POST", headers: admin, body: "{}" })
    ).json<{ token: string }>();
    expect((await hostedLogs(stranger.token)).status).toBe(403);
    const cli = await runCliAsync(["logs", "logs", "--host", host.url, "--json"], {
      PLATFORM_TOKEN: owner.token,
    });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toContain('"message":"hit"');
    const refused = await runCliAsync(["logs", "logs", "--host", host.url], {
      PLATFORM_TOKEN: stranger.token,
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("belongs to another developer");
  });
});

describe("platform logs against platform dev", () => {
  let dir: string;
  let dev: CliProcess;
  let port: number;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "platform-logs-"));
    await cp("fixtures/logs", dir, { recursive: true });
    await writeFile(join(dir, ".env.platform.server"), `API_SECRET=${SECRET}\n`);
    ({ dev, port } = await startDev(dir));
  });
  afterAll(async () => {
    await dev.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("prints lines for humans, as JSON, and follows new ones", async () => {
    await sendRequest(`http://localhost:${port}/api/mutation/hit`, { method: "POST", body: '{"n":1}' });
    const human = runCli(["logs", "--port", String(port)]);
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/INFO {2}hit \[[^\]]+\] hit \{"n":1\}/);
    // Every call's budget figures, with each budget's share.
    expect(human.stdout).toMatch(
      /INFO {2}hit \[[^\]]+\] mutation hit ok · [\d.]+ ms wall, [\d.]+ ms cpu \(\d+%\) · returned 0 \(0%\) · read 0 \(0%\) · 0 B \(0%\) · ranges 0 \(0%\) · 0 scans · 1 write/,
    );
    expect(human.stdout).not.toContain(SECRET);
    const json = runCli(["logs", "--port", String(port), "--json"]);
    expect(JSON.parse(json.stdout.trim().split("\n")[0] as string)).toMatchObject({
      deployment: "dev",
      handler: "hit",
      message: "hit",
    });

    // A failed call: its message (redacted) and where it failed, in the terminal and the logs.
    await sendRequest(`http://localhost:${port}/api/mutation/fail`, { method: "POST", body: "{}" });
    const failed =
      /mutation fail handler_error[^\n]*: Uncaught Error: bad secret \[redacted\][^\n]*\n {4}at fail \(server\/index\.ts:\d+:\d+\)/;
    await dev.waitFor(failed);
    expect(runCli(["logs", "--port", String(port)]).stdout).toMatch(failed);

    const follower = startCli(["logs", "--port", String(port), "--follow"]);
    await follower.waitFor(/leaking \[redacted\]/);
    await sendRequest(`http://localhost:${port}/api/mutation/hit`, { method: "POST", body: '{"n":2}' });
    await follower.waitFor(/hit \{"n":2\}/);
    await follower.stop();
    expect(dev.output()).not.toContain(SECRET);
  }, 60_000);

  it("says what to do when no dev server runs", async () => {
    const result = runCli(["logs", "--port", String(await freePort())]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("Is the server running?");
  });
});
