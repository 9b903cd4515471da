/**
 * A server process that is alive but answers no one (its main thread blocked for good, or the
 * process stopped) is replaced: its heartbeats stop, the supervisor kills it, and a new server
 * process answers the connections that waited in the socket's backlog meanwhile. A real
 * `platform host` (supervisor and server processes), its server stopped with SIGSTOP.
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { SERVER_SILENCE_ENV } from "../cli/server-silence.js";
import { type CliProcess, freePort, startCli } from "./helpers/cli.js";

/** The silence limit of this test's host: short, so the test is quick (the default is 10 s). */
const SILENCE_MS = 3000;

const token = "server-liveness-token";
let dir: string;
let host: CliProcess;
let port: number;
/** The server process this test stops; killed afterwards if the supervisor did not. */
let stopped: number | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-liveness-"));
  port = await freePort();
  host = startCli(["host", "--port", String(port), "--data", join(dir, "data")], {
    PLATFORM_ADMIN_TOKEN: token,
    [SERVER_SILENCE_ENV]: String(SILENCE_MS),
  });
  await host.waitFor(/platform host listening/);
});
afterAll(async () => {
  if (stopped !== undefined && isRunning(stopped)) process.kill(stopped, "SIGKILL");
  await host.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Process `pid`'s state letter and parent, and when it started, from /proc (Linux). */
function processStat(pid: number): { state: string; parent: number; started: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The fields after the command name, which is in parentheses and may hold anything.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0] as string, parent: Number(fields[1]), started: Number(fields[19]) };
}

/** The child processes of `parent`, the longest running first. */
function childrenOf(parent: number): number[] {
  const children: Array<{ pid: number; started: number }> = [];
  for (const entry of readdirSync("/proc")) {
    const stat = /^\d+$/.test(entry) ? processStat(Number(entry)) : undefined;
    if (stat?.parent === parent) children.push({ pid: Number(entry), started: stat.started });
  }
  return children.sort((a, b) => a.started - b.started || a.pid - b.pid).map((child) => child.pid);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it("kills a stopped server process and answers the requests that waited from a new one", async () => {
  const supervisor = host.child.pid as number;
  // The first server process started is the active one; the spare is started once it listens.
  const server = childrenOf(supervisor)[0];
  if (server === undefined) throw new Error(`no server process under the supervisor:\n${host.output()}`);
  stopped = server;
  process.kill(server, "SIGSTOP");
  while (processStat(server)?.state !== "T") await new Promise((resolve) => setTimeout(resolve, 20));

  // This test process has made no request yet, so this is a new connection: it waits in the
  // listening socket's backlog, which only a new server process will accept.
  const metrics = await sendRequest(`http://localhost:${port}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(metrics.status).toBe(200);
  expect(metrics.text()).toMatch(/^platform_server_restarts_total [1-9]\d*$/m);
  expect(host.output()).toContain(
    `platform host: server process ${server} sent no heartbeat for ${SILENCE_MS / 1000} s (its main thread is blocked, or it is stopped); killing it`,
  );
  expect(host.output()).toContain("platform host: server exited (SIGKILL); restarting in 0 ms");
  expect(isRunning(server)).toBe(false);
  expect(childrenOf(supervisor)).not.toContain(server);
}, 120_000);
