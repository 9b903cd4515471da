import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type HttpResponse, sendRequest } from "../../cli/http.js";
import { type CliProcess, freePort, startCli } from "./cli.js";

/** A running `platform host` (supervisor and server processes) with its own data folder. */
export interface HostProcess {
  dir: string;
  port: number;
  process: CliProcess;
  /** Calls query, mutation or endpoint `name` of deployment `id` over HTTP. */
  call(id: string, kind: string, name: string, args?: unknown): Promise<HttpResponse>;
  /** Stops the host and removes its folder. */
  stop(): Promise<void>;
}

/**
 * Starts `platform host` from `dist/` on a free port, with operator token `token`, a data folder
 * in a new temporary folder named after `prefix`, and `args`; resolves once it listens.
 */
export async function startHostProcess(
  prefix: string,
  token: string,
  args: string[] = [],
): Promise<HostProcess> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const port = await freePort();
  const process = startCli(["host", "--port", String(port), "--data", join(dir, "data"), ...args], {
    PLATFORM_ADMIN_TOKEN: token,
  });
  await process.waitFor(/platform host listening/);
  return {
    dir,
    port,
    process,
    call: (id, kind, name, args = {}) =>
      sendRequest(`http://${id}.localhost:${port}/api/${kind}/${name}`, {
        method: "POST",
        body: JSON.stringify(args),
        timeoutMs: 20_000,
      }),
    stop: async () => {
      await process.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
