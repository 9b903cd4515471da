/**
 * The measured set-up of bench/hosts: a private PostgreSQL (with `pg_stat_statements` loaded, to
 * count statements) and real `platform host` processes from dist/, each pinned to its own core with
 * `taskset`, sharing it; the bench capsule deployed once through one host's control plane and
 * seeded through its HTTP API.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { sendRequest } from "../../dist/cli/http.js";
import { REQUIRED_NODE_FLAGS } from "../../dist/cli/node-flags.js";
import { freePort } from "../../scripts/free-port.js";

const TOKEN = "bench-hosts";
/** The deployment's id, and the `Host` header that reaches it on a host at `port`. */
export const DEPLOYMENT = "bench";
export const hostHeader = (port: number) => `${DEPLOYMENT}.localhost:${port}`;

/** Whether `taskset` (util-linux) is there to pin a host to a core. */
export function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A running `platform host` (supervisor, server and spare server: one process tree). */
export interface BenchHost {
  port: number;
  pid: number;
  core: number | undefined;
  stop(): Promise<void>;
}

/**
 * Starts `platform host --database <url>` on a free loopback port with its own data folder, the
 * request quota off, under `taskset -c <core>` when `core` is given (its children inherit the
 * pinning). Its access log (stdout) goes to /dev/null, as a host's log would go to a file.
 */
export async function startBenchHost(dir: string, database: string, core?: number): Promise<BenchHost> {
  const port = await freePort();
  const command = [
    process.execPath,
    ...REQUIRED_NODE_FLAGS,
    "dist/cli/bin.js",
    "host",
    "--port",
    String(port),
    "--data",
    join(dir, `host-${port}`),
    "--database",
    database,
    "--request-quota",
    "0",
  ];
  const devNull = openSync("/dev/null", "w");
  const child: ChildProcess = spawn(
    core === undefined ? (command[0] as string) : "taskset",
    core === undefined ? command.slice(1) : ["-c", String(core), ...command],
    { env: { ...process.env, PLATFORM_ADMIN_TOKEN: TOKEN }, stdio: ["ignore", devNull, "pipe"] },
  );
  closeSync(devNull);
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`platform host exited: ${stderr}`);
    const ready = await sendRequest(`http://localhost:${port}/v1/deploys`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      timeoutMs: 2_000,
    }).catch(() => undefined);
    if (ready?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`platform host did not answer within 60 s: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    port,
    pid: child.pid as number,
    core,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}

async function call(port: number, kind: string, name: string, args: unknown): Promise<unknown> {
  const response = await sendRequest(`http://${hostHeader(port)}/api/${kind}/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(args),
    timeoutMs: 60_000,
  });
  if (response.status !== 200) throw new Error(`${kind} ${name}: ${response.status} ${response.text()}`);
  return (JSON.parse(response.text()) as { value: unknown }).value;
}

/** What the seeded deployment holds: its lists' ids and its items' ids. */
export interface Seeded {
  lists: string[];
  items: string[];
}

/**
 * Deploys the bench capsule through `first`'s control plane, seeds `lists` lists of `perList`
 * items, and waits until every one of `hosts` answers a read of it.
 */
export async function deployAndSeed(
  code: string,
  hosts: readonly BenchHost[],
  lists: number,
  perList: number,
): Promise<Seeded> {
  const first = hosts[0] as BenchHost;
  const deployed = await sendRequest(`http://localhost:${first.port}/v1/deploys/${DEPLOYMENT}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ code }),
    timeoutMs: 60_000,
  });
  if (deployed.status !== 201) throw new Error(`deploy: ${deployed.status} ${deployed.text()}`);
  const seeded: Seeded = { lists: [], items: [] };
  for (let l = 0; l < lists; l++) {
    const value = (await call(first.port, "mutation", "seed", { lists: 1, perList })) as Seeded;
    seeded.lists.push(...value.lists);
    seeded.items.push(...value.items);
  }
  for (const host of hosts) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const row = await call(host.port, "query", "get", { id: seeded.items[0] }).catch(() => null);
      if (row) break;
      if (Date.now() > deadline) throw new Error(`host on port ${host.port} does not serve the deployment`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return seeded;
}
