import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { REQUIRED_NODE_FLAGS } from "../../cli/node-flags.js";
import { freePort } from "../../scripts/free-port.js";

/**
 * How tests run the `platform` command: the built CLI (`dist/`, which `npm test` builds first),
 * with its required Node flags passed directly so it does not re-run itself.
 */
export const CLI = [...REQUIRED_NODE_FLAGS, "dist/cli/bin.js"];

/** Runs the CLI from source (as `platform ...`) and waits for it to exit. */
export function runCli(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [...CLI, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
}

/**
 * Runs the CLI without blocking this process's event loop: needed when the CLI talks to a host
 * running inside the test process itself (`runCli` would deadlock it).
 */
export function runCliAsync(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      env: { ...process.env, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** A long-running CLI process whose output is collected. */
export interface CliProcess {
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the CLI from source in the background; `detached` puts it in its own process group (so a
 * test can kill a supervisor and its server at once).
 */
export function startCli(
  args: string[],
  env: Record<string, string> = {},
  options: { detached?: boolean } = {},
): CliProcess {
  const child = spawn(process.execPath, [...CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached === true,
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return {
    child,
    output: () => output,
    waitFor: async (pattern, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output)) {
        if (Date.now() > deadline)
          throw new Error(`Timed out waiting for ${pattern}; output so far:\n${output}`);
        if (child.exitCode !== null)
          throw new Error(`CLI exited (${child.exitCode}) before ${pattern}; output:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts `platform dev <dir>` on a free port and waits until it serves. */
export async function startDev(
  dir: string,
  extra: string[] = [],
): Promise<{ dev: CliProcess; port: number }> {
  const port = await freePort();
  const dev = startCli(["dev", dir, "--port", String(port), ...extra]);
  await dev.waitFor(/platform dev: serving/);
  return { dev, port };
}

export { freePort };
