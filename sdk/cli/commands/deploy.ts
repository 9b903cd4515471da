import { basename, resolve } from "node:path";
import type { Command } from "commander";
import { PlatformError } from "../../values/index.js";
import { bundleCapsule } from "../bundle.js";
import { ownerToken } from "../config.js";
import { envFileTrackedByGit, readServerEnv } from "../env-file.js";
import { sendRequest } from "../http.js";
import { reportError } from "../output.js";

/** A deployment id from a folder name: lowercase letters, digits and '-'. */
function idFromDir(dir: string): string {
  const id = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return id || "app";
}

/** `platform deploy [dir] --host <url>`: bundles the capsule and deploys it through the operator API. */
export function registerDeploy(program: Command): void {
  program
    .command("deploy")
    .argument("[dir]", "capsule folder (with server/index.ts)", ".")
    .description("bundle a capsule and deploy it to a host (creates or updates the deployment)")
    .requiredOption("--host <url>", "control plane URL of the host, e.g. http://localhost:8080")
    .option("--name <id>", "deployment id (default: the folder name)")
    .option(
      "--token <token>",
      "developer or operator token (default: $PLATFORM_TOKEN, then `platform login`, then $PLATFORM_ADMIN_TOKEN)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  PLATFORM_ADMIN_TOKEN=secret platform deploy fixtures/todo --host http://localhost:8080 --name todo",
    )
    .action(async (dirArg: string, flags: { host: string; name?: string; token?: string }) => {
      try {
        const dir = resolve(dirArg);
        const id = flags.name ?? idFromDir(dir);
        const token = ownerToken(flags.host, flags.token);
        if (!token)
          throw new PlatformError(
            "unauthorized",
            "No credentials: run platform login --host <url>, or set PLATFORM_TOKEN (or PLATFORM_ADMIN_TOKEN).",
          );
        process.stdout.write(`bundling ${dir}\n`);
        if (envFileTrackedByGit(dir)) {
          process.stderr.write(
            "warning: .env.platform.server is tracked by git, so its secrets are in your history. Remove it (git rm --cached .env.platform.server), add it to .gitignore, and rotate the secrets.\n",
          );
        }
        const { code } = await bundleCapsule(dir);
        const base = new URL(flags.host);
        const response = await sendRequest(new URL(`/v1/deploys/${id}`, base).toString(), {
          method: "PUT",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ code, env: readServerEnv(dir) }),
        });
        if (response.status >= 400) {
          const body = response.json<{ error?: { code: string; message: string } }>();
          throw new PlatformError(
            "bad_request",
            body.error?.message ?? `The host answered ${response.status}.`,
          );
        }
        process.stdout.write(`deployed ${id}: ${base.protocol}//${id}.${base.host}\n`);
      } catch (error) {
        process.exit(reportError(error));
      }
    });
}
