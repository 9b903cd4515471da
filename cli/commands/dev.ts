import { existsSync, watch } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { bundleCapsule } from "../bundle.js";
import { buildClientApp } from "../client-build.js";
import { type Colors, colorsFor, noColors } from "../colors.js";
import { readServerEnv } from "../env-file.js";
import { parsePort } from "../flags.js";
import { isListenError, listenFailure } from "../listen-failure.js";
import { plural, printWarning, reportError } from "../output.js";

const DEV_DEPLOYMENT = "dev";

/**
 * A sign-in code `platform dev` received instead of sending it (it has no SMTP transport), as the
 * line a developer looks for: `sign-in code for ada@example.com: 123456 (expires in 10 minutes)`.
 */
export function formatSignInCode(
  unsent: { email: string; code: string; expiresAt: number },
  c: Colors = noColors,
  now = Date.now(),
): string {
  const minutes = Math.max(1, Math.round((unsent.expiresAt - now) / 60_000));
  return `sign-in code for ${unsent.email}: ${c.bold(unsent.code)} (expires in ${plural(minutes, "minute")})`;
}

/** `platform dev [dir]`: one capsule, a throw-away database, redeployed when server/ changes. */
export function registerDev(program: Command): void {
  program
    .command("dev")
    .argument("[dir]", "capsule folder (with server/index.ts)", ".")
    .description(
      "run a capsule locally at http://localhost:<port>, redeploying when server/ changes (data is kept until exit); serves client/, with client/main.tsx built by esbuild to /main.js",
    )
    .addOption(new Option("--port <port>", "port to listen on").default(3000).argParser(parsePort))
    .option(
      "--data <dir>",
      "keep the dev database in this folder across restarts (default: a throw-away folder)",
    )
    .addHelpText("after", "\nExamples:\n  platform dev fixtures/todo\n  platform dev . --port 4000")
    .action(async (dirArg: string, flags: { port: number; data?: string }) => {
      const dir = resolve(dirArg);
      const keep = flags.data !== undefined;
      const data = keep ? resolve(flags.data as string) : await mkdtemp(join(tmpdir(), "platform-dev-"));
      const clientOut = await mkdtemp(join(tmpdir(), "platform-client-"));
      const discard = async () => {
        await rm(clientOut, { recursive: true, force: true });
        if (!keep) await rm(data, { recursive: true, force: true });
      };
      try {
        const { startHost } = await import("../../host/index.js");
        const { randomBytes } = await import("node:crypto");
        const host = await startHost({
          data,
          port: flags.port,
          domain: "localhost",
          adminToken: randomBytes(24).toString("hex"),
          devDeployment: DEV_DEPLOYMENT,
          devClientDirs: [clientOut, join(dir, "client")],
          logCalls: false,
          onUnsentCode: (unsent) =>
            process.stdout.write(`${formatSignInCode(unsent, colorsFor(process.stdout))}\n`),
        });
        // A call above half of any budget gets a warning here, with what to do about it.
        host.deployments.logs.follow(DEV_DEPLOYMENT, (line) => {
          if (line.warning === "budget") printWarning(line.message);
        });
        const buildClient = async () => {
          const started = Date.now();
          const entry = await buildClientApp(dir, clientOut);
          if (entry) process.stdout.write(`built ${entry} in ${Date.now() - started} ms\n`);
        };
        await buildClient().catch((error: unknown) => {
          reportError(error);
        });
        const deploy = async () => {
          const started = Date.now();
          const { code } = await bundleCapsule(dir);
          await host.deployments.deploy(DEV_DEPLOYMENT, { code, env: readServerEnv(dir) }, (p) =>
            process.stdout.write(`  backfilling ${p.table}.${p.index}: ${plural(p.done, "row")}\n`),
          );
          process.stdout.write(`deployed ${dir} in ${Date.now() - started} ms\n`);
        };
        await deploy();
        const url = colorsFor(process.stdout).cyan(`http://localhost:${host.port}`);
        process.stdout.write(`platform dev: serving ${dir} at ${url}\n`);
        // Rebuilds run one after another, each 100 ms after the last change of its folder.
        let running = Promise.resolve();
        const onChanges = (folder: string, rebuild: () => Promise<void>) => {
          let timer: NodeJS.Timeout | undefined;
          watch(folder, { recursive: true }, () => {
            clearTimeout(timer);
            timer = setTimeout(() => {
              running = running.then(() =>
                rebuild().catch((error: unknown) => {
                  reportError(error);
                }),
              );
            }, 100);
          });
        };
        onChanges(join(dir, "server"), deploy);
        if (existsSync(join(dir, "client"))) onChanges(join(dir, "client"), buildClient);
        const stop = async () => {
          await host.close();
          await discard();
          process.exit(0);
        };
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      } catch (error) {
        await discard();
        process.exit(
          reportError(isListenError(error) ? listenFailure("127.0.0.1", flags.port, error.code) : error),
        );
      }
    });
}
