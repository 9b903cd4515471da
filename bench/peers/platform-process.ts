/**
 * The platform's process start, for bench/peers' cold starts next to workerd's: `platform host`
 * (the built CLI, as an operator runs it) spawned over an already seeded data folder, timed until
 * its first get by id to the bench deployment is answered over HTTP.
 */
import { spawn } from "node:child_process";
import { request } from "node:http";
import { freePort } from "../../scripts/free-port.js";

/** One get by id to deployment `bench` (by its host name); refused connections count as not yet. */
function get(port: number, id: string): Promise<number | "refused"> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ id });
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/api/query/get",
        headers: { host: `bench.localhost:${port}`, "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.once("error", (error: NodeJS.ErrnoException) =>
      error.code === "ECONNREFUSED" ? resolve("refused") : reject(error),
    );
    req.end(body);
  });
}

/** Spawns `platform host --data <data>`, waits for its first answer (ms since spawn), stops it. */
export async function platformProcessStart(data: string, id: string): Promise<number> {
  const port = await freePort();
  const started = process.hrtime.bigint();
  const child = spawn(
    process.execPath,
    ["dist/cli/bin.js", "host", "--data", data, "--port", String(port), "--request-quota", "0"],
    { env: { ...process.env, PLATFORM_ADMIN_TOKEN: "bench" }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let errors = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`platform host exited (${child.exitCode}): ${errors}`);
      const status = await get(port, id);
      if (status === 200) return Number(process.hrtime.bigint() - started) / 1e6;
      if (status !== "refused") throw new Error(`platform host answered ${status}: ${errors}`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
  }
}
