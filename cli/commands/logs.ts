import { type Command, Option } from "commander";
import { printableJson } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { colorsFor } from "../colors.js";
import { ownerToken } from "../config.js";
import { parseDeploymentId, parseHostUrl, parsePort, requireIdWithHost } from "../flags.js";
import { onLines, openRequest } from "../http.js";
import { formatLogLine, parseLogLine } from "../log-format.js";
import { runAction } from "../output.js";
import { remoteErrorOf, succeeded } from "../remote-error.js";

/** `platform logs [deploy_id]`: handler log lines of the dev server or of a hosted deployment. */
export function registerLogs(program: Command): void {
  program
    .command("logs")
    .argument(
      "[deploy_id]",
      "a hosted deployment (needs --host and the owner's credentials); none: the dev server",
      parseDeploymentId,
    )
    .description(
      "show handler log lines (ctx.log) and every call's budget figures of the dev server or of a hosted deployment",
    )
    .addOption(new Option("--port <port>", "port of the local dev server").default(3000).argParser(parsePort))
    .addOption(
      new Option("--host <url>", "control plane URL of the host, for a hosted deployment").argParser(
        parseHostUrl,
      ),
    )
    .option("--follow", "keep printing new lines")
    .option("--json", "print one JSON object per line")
    .addHelpText(
      "after",
      "\nExamples:\n  platform logs --follow\n  platform logs todo --host http://localhost:8080 --json",
    )
    .action(
      (
        deployId: string | undefined,
        flags: { port: number; host?: string; follow?: boolean; json?: boolean },
      ) =>
        runAction(async () => {
          let url: URL;
          const headers: Record<string, string> = {};
          requireIdWithHost(deployId, flags.host, "platform logs <deploy_id> --host <url>");
          if (deployId) {
            if (!flags.host)
              throw new PlatformError("bad_request", "A hosted deployment needs --host <control plane URL>.");
            url = new URL(`/v1/deploys/${encodeURIComponent(deployId)}/logs`, flags.host);
            const token = ownerToken(flags.host);
            if (!token)
              throw new PlatformError(
                "unauthorized",
                "No credentials: run platform login --host <url>, or set PLATFORM_TOKEN.",
              );
            headers.authorization = `Bearer ${token}`;
          } else {
            url = new URL(`http://localhost:${flags.port}/__platform/logs`);
          }
          if (flags.follow) url.searchParams.set("follow", "1");
          await new Promise<void>((resolve, reject) => {
            const req = openRequest(url, { headers }, (res) => {
              if (!succeeded(res.statusCode)) {
                remoteErrorOf(res, url).then(reject, reject);
                return;
              }
              const c = colorsFor(process.stdout);
              onLines(res, (text) => {
                // Shown as text, in --json too: a tenant's message or a server's line may hold
                // escape codes (U+009B, U+202E came out raw in --json) the terminal would act on.
                const { line, value } = parseLogLine(text);
                process.stdout.write(`${flags.json ? printableJson(value) : formatLogLine(line, c)}\n`);
              }).then(resolve, reject);
            });
            req.on("error", (error) =>
              reject(
                new PlatformError(
                  "unavailable",
                  `Cannot reach ${url.origin} (${(error as Error).message}). Is the server running?`,
                ),
              ),
            );
            req.end();
          });
        }),
    );
}
