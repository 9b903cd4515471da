/**
 * bench/peers' workerd peer: Cloudflare's open-source Workers runtime (npm `workerd`, whose binary
 * ships in the package) running bench/peers/workerd/worker.js, a Durable Object over its SQLite
 * storage, in its own process on loopback. Each start writes a capnp config into `dir` and keeps the
 * object's storage in `dir/storage`, so a second start over the same dir reopens the seeded rows.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../scripts/free-port.js";
import type { SeedRow } from "../suite/peers.js";

const WORKER_SCRIPT = fileURLToPath(new URL("./workerd/worker.js", import.meta.url));
const SEED_BATCH = 1000;

/** A running workerd: its port, how long it took from spawn to its first answer, and a stop. */
export interface RunningWorkerd {
  port: number;
  /** Spawn of the process until the first get by id was answered over HTTP (ms). */
  startMs: number;
  close(): Promise<void>;
}

/** The workerd binary of the installed package (the package's platform-specific dependency). */
export function workerdBinary(): string {
  const require = createRequire(import.meta.url);
  const arch = process.arch === "x64" ? "64" : process.arch;
  return require.resolve(`@cloudflare/workerd-${process.platform}-${arch}/bin/workerd`);
}

function config(port: number, storage: string): string {
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .todos),
    (name = "storage", disk = (path = ${JSON.stringify(storage)}, writable = true)),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);

const todos :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = "2025-01-01",
  durableObjectNamespaces = [(className = "Todos", uniqueKey = "bench-peers-todos", enableSql = true)],
  durableObjectStorage = (localDisk = "storage"),
  bindings = [(name = "TODOS", durableObjectNamespace = "Todos")],
);
`;
}

/** POSTs `body` as JSON and returns the parsed answer; throws on a non-2xx status. */
export async function post(base: string, path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Sends `probe` until the process answers it (refused connections are retried at once). */
async function firstAnswer(base: string, probe: unknown, child: ChildProcess, stderr: () => string) {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`workerd exited (${child.exitCode}): ${stderr()}`);
    try {
      return await post(base, "/api/query/get", probe);
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (code !== "ECONNREFUSED") throw error;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }
}

/**
 * Starts workerd over `dir` (writing its config and script there), waits for its first answer and,
 * when `rows` are given, seeds them in batches of 1,000 (one SQLite transaction each).
 */
export async function startWorkerd(dir: string, rows: SeedRow[] = [], probeId = ""): Promise<RunningWorkerd> {
  const storage = join(dir, "storage");
  await mkdir(storage, { recursive: true });
  await copyFile(WORKER_SCRIPT, join(dir, "worker.js"));
  const port = await freePort();
  await writeFile(join(dir, "config.capnp"), config(port, storage));
  const binary = workerdBinary();
  const started = process.hrtime.bigint();
  const child = spawn(binary, ["serve", "config.capnp"], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  let errors = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const close = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  };
  const base = `http://127.0.0.1:${port}`;
  try {
    await firstAnswer(base, { id: probeId }, child, () => errors);
    const startMs = Number(process.hrtime.bigint() - started) / 1e6;
    for (let i = 0; i < rows.length; i += SEED_BATCH)
      await post(base, "/seed", rows.slice(i, i + SEED_BATCH));
    return { port, startMs, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * First requests to new Durable Objects in a running workerd (ms each): a get by id to an object
 * never used before, which workerd makes in the worker's already-running isolate, with its own new
 * SQLite database (the constructor creates the table and index).
 */
export async function newObjectColdStarts(port: number, rounds: number, tag: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = process.hrtime.bigint();
    await post(`http://127.0.0.1:${port}`, `/api/query/get?object=cold-${tag}-${i}`, { id: "none" });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return times;
}
