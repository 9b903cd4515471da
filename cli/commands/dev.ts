import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { rootLinkedOutside } from "../../host/deployments/client-root.js";
import { printable } from "../../sdk/protocol/index.js";
import { bundleCapsule, capsuleEntry } from "../bundle.js";
import { buildClientApp } from "../client-build.js";
import { type Colors, colorsFor, noColors } from "../colors.js";
import { readServerEnv, SERVER_ENV_FILE } from "../env-file.js";
import { exitOnUnhandledErrors } from "../fatal-errors.js";
import { parsePort } from "../flags.js";
import { warnIfShared } from "../host-data.js";
import { isListenError, listenFailure } from "../listen-failure.js";
import { formatCallSummary, type LogLine } from "../log-format.js";
import { plural, printWarning, reportError } from "../output.js";
import { sourceStackMapper } from "../stack-map.js";
import { formatTypeCheck, startTypeCheck, type TypeCheckResult } from "../typecheck.js";
import { watchFolder } from "../watch.js";

const DEV_DEPLOYMENT = "dev";
/** How long a stop (Ctrl-C) may take to close the server and remove its folders before it exits anyway (ms). */
const STOP_GRACE_MS = 10_000;

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

/**
 * Prints one finished call of the dev deployment: a summary line on stdout, or on stderr for a
 * failure, with its code, message and stack in the capsule's source.
 */
function printCall(line: LogLine): void {
  if (!line.call) return;
  const stream = line.call.outcome === "ok" ? process.stdout : process.stderr;
  stream.write(`${formatCallSummary(line.time, line.call, colorsFor(stream))}\n`);
}

/**
 * Prints the background type check's results as they come, each one only when it differs from the
 * last (an edit that changes nothing for the checker prints nothing): stdout without errors, else
 * stderr.
 */
function typeCheckPrinter(): (result: TypeCheckResult) => void {
  let last = "";
  return (result) => {
    const stream = result.errorCount === 0 ? process.stdout : process.stderr;
    const text = formatTypeCheck(result, colorsFor(stream));
    if (text !== last) stream.write(`${text}\n`);
    last = text;
  };
}

/**
 * A failed deploy's error with where in the capsule's source it failed, when the capsule's code
 * threw (at its top level): the frames of the isolate's error, kept as a cause, mapped through the
 * bundle's source map and added to the message (`at server/index.ts:3:7`).
 */
function withSourceFrames(error: unknown, map: (stack: string) => string | undefined): unknown {
  for (let cause = (error as Error)?.cause; cause instanceof Error; cause = cause.cause) {
    const frames = typeof cause.stack === "string" ? map(cause.stack) : undefined;
    if (frames && error instanceof Error) {
      error.message = `${error.message}\n${frames}`;
      return error;
    }
  }
  return error;
}

/** `platform dev [dir]`: one capsule, a throw-away database, redeployed when server/ changes. */
export function registerDev(program: Command): void {
  program
    .command("dev")
    .argument("[dir]", "capsule folder (with server/index.ts)", ".")
    .description(
      "run a capsule locally at http://localhost:<port>, redeploying when server/ changes (data is kept until exit); prints every call (failures with a stack in your source) and type-checks in the background; serves client/, with client/main.tsx built by esbuild to /main.js",
    )
    .addOption(new Option("--port <port>", "port to listen on").default(3000).argParser(parsePort))
    .option(
      "--data <dir>",
      "keep the dev database in this folder across restarts (default: a throw-away folder)",
    )
    .option("--no-typecheck", "do not type-check the capsule in the background")
    .addHelpText("after", "\nExamples:\n  platform dev fixtures/todo\n  platform dev . --port 4000")
    .action(async (dirArg: string, flags: { port: number; data?: string; typecheck: boolean }) => {
      const dir = resolve(dirArg);
      const keep = flags.data !== undefined;
      const data = keep ? resolve(flags.data as string) : await mkdtemp(join(tmpdir(), "platform-dev-"));
      if (keep) warnIfShared(data);
      const linked = await rootLinkedOutside(join(dir, "client"));
      if (linked !== undefined)
        printWarning(
          `client/ is not served: it is a symbolic link to ${printable(linked)}, outside the project or into a dot-folder of it. Copy or build the files into client/.`,
        );
      const clientOut = await mkdtemp(join(tmpdir(), "platform-client-"));
      const discard = async () => {
        await rm(clientOut, { recursive: true, force: true });
        if (!keep) await rm(data, { recursive: true, force: true });
      };
      /** The host once started, for the failure path to close. */
      let started: { close(): Promise<void> } | undefined;
      try {
        exitOnUnhandledErrors("platform dev");
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
        started = host;
        // Every call gets a line here; one above half of any budget also gets a warning, with
        // what to do about it.
        host.deployments.logs.follow(DEV_DEPLOYMENT, (line) => {
          // A warning names a tenant's handler: printWarning shows it as text.
          if (line.warning === "budget") printWarning(line.message);
          else printCall(line);
        });
        const buildClient = async () => {
          const started = Date.now();
          const entry = await buildClientApp(dir, clientOut);
          if (entry) process.stdout.write(`built ${printable(entry)} in ${Date.now() - started} ms\n`);
        };
        await buildClient().catch((error: unknown) => {
          reportError(error);
        });
        const deploy = async () => {
          const started = Date.now();
          const { code, entry, sourceMap } = await bundleCapsule(dir);
          await host.deployments
            .deploy(DEV_DEPLOYMENT, { code, env: readServerEnv(dir) }, (p) =>
              // The project's table and index names, shown as text.
              process.stdout.write(
                `  ${printable(`backfilling ${p.table}.${p.index}: ${plural(p.done, "row")}`)}\n`,
              ),
            )
            .catch((error: unknown) => {
              throw withSourceFrames(error, sourceStackMapper(sourceMap));
            });
          host.deployments.logs.mapStacks(DEV_DEPLOYMENT, sourceStackMapper(sourceMap));
          process.stdout.write(`deployed ${printable(dir)} in ${Date.now() - started} ms\n`);
          return entry;
        };
        const entry = await deploy().catch(async (error: unknown) => {
          // A capsule that does not build or deploy yet is the developer's to fix while dev
          // watches; only a folder with no capsule at all ends dev.
          const found = capsuleEntry(dir);
          if (!found) throw error;
          reportError(error);
          const before = (await host.deployments.get(DEV_DEPLOYMENT)) !== undefined;
          process.stdout.write(
            `platform dev: the capsule did not deploy; ${before ? "serving the version deployed before (kept in --data)" : "nothing is served"} until a save fixes it\n`,
          );
          return found;
        });
        const stopChecking = flags.typecheck
          ? startTypeCheck(dir, entry, typeCheckPrinter(), (error) => reportError(error))
          : async () => {};
        // Rebuilds run one after another, each once its folder has been quiet for a moment. A
        // failure just like the last one (an editor's save seen twice, a save changing nothing
        // the build sees) is not printed again, only noted.
        let running = Promise.resolve();
        let lastFailure: unknown;
        const rebuildOnChange = (
          folder: string,
          rebuild: () => Promise<unknown>,
          afterFailure = "",
          onlyFile?: string,
        ) =>
          watchFolder(
            folder,
            () => {
              running = running.then(() =>
                rebuild().then(
                  () => {
                    lastFailure = undefined;
                  },
                  (error: unknown) => {
                    const text = String((error as Error)?.message ?? error);
                    if (text === lastFailure) {
                      process.stdout.write("platform dev: the same error as above\n");
                      return;
                    }
                    lastFailure = text;
                    reportError(error);
                    process.stdout.write(afterFailure);
                  },
                ),
              );
            },
            (error) => reportError(error),
            onlyFile,
          );
        const stillServing = "platform dev: still serving the last version that deployed\n";
        const watching = [await rebuildOnChange(join(dir, "server"), deploy, stillServing)];
        // The server-only env ships with each deploy: a change to it deploys again.
        watching.push(await rebuildOnChange(dir, deploy, stillServing, SERVER_ENV_FILE));
        if (existsSync(join(dir, "client")))
          watching.push(await rebuildOnChange(join(dir, "client"), buildClient));
        const colors = colorsFor(process.stdout);
        const url = colors.cyan(`http://localhost:${host.port}`);
        process.stdout.write(`platform dev: serving ${printable(dir)} at ${url}\n`);
        const dashboard = colors.cyan(`http://dashboard.localhost:${host.port}/dashboard`);
        process.stdout.write(`platform dev: dashboard at ${dashboard} (signed in on this machine)\n`);
        // Once: a terminal's Ctrl-C reaches this process twice (from the terminal, and forwarded by
        // the process that started it with Node's flags), and a second stop found no handler and
        // killed it midway, leaving the dev database (env values in it) in the temporary folder.
        let stopping = false;
        const stop = async () => {
          if (stopping) return;
          stopping = true;
          // A cleanup that hangs does not keep the terminal.
          setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
          await Promise.all([...watching.map((unwatch) => unwatch()), stopChecking()]);
          await host.close();
          await discard();
          process.exit(0);
        };
        for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, stop);
      } catch (error) {
        // Closed before its folders go: its code-cache writes would race their removal.
        await started?.close().catch(() => {});
        await discard();
        process.exit(
          reportError(isListenError(error) ? listenFailure("127.0.0.1", flags.port, error.code) : error),
        );
      }
    });
}
