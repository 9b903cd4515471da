import { type Command, Option } from "commander";
import { DEVELOPER_TOKEN_PREFIX } from "../../host/auth/developers.js";
import { PlatformError } from "../../sdk/values/index.js";
import { parseHostUrl } from "../flags.js";
import { sendRequest } from "../http.js";
import { issuedToken, printResult, runAction } from "../output.js";
import { remoteError } from "../remote-error.js";

interface CreatedDeveloper {
  id: string;
  name: string | null;
  email: string | null;
  token: string;
}

/**
 * `platform developers create --host <url> [--email e] [--name n]`: the operator makes a developer
 * account and gets its token, shown once (the host keeps only a hash), with what the developer
 * runs next. Needs the operator token: `--token` or `PLATFORM_ADMIN_TOKEN`.
 */
export function registerDevelopers(program: Command): void {
  const developers = program.command("developers").description("developer accounts of a host (operator)");
  developers
    .command("create")
    .description("create a developer and print its token (shown once)")
    .addOption(
      new Option("--host <url>", "control plane URL of the host, e.g. http://localhost:8080")
        .makeOptionMandatory()
        .argParser(parseHostUrl),
    )
    .option("--email <email>", "the developer's email address")
    .option("--name <name>", "the developer's name")
    .option("--token <token>", "the operator token (default: $PLATFORM_ADMIN_TOKEN)")
    .option("--json", "print the answer as JSON")
    .addHelpText(
      "after",
      "\nExamples:\n  PLATFORM_ADMIN_TOKEN=secret platform developers create --host http://localhost:8080 --email ada@example.com",
    )
    .action((flags: { host: string; email?: string; name?: string; token?: string; json?: boolean }) =>
      runAction(async () => {
        const token = flags.token ?? process.env.PLATFORM_ADMIN_TOKEN;
        if (!token)
          throw new PlatformError(
            "unauthorized",
            "Creating developers needs the operator token: pass --token or set PLATFORM_ADMIN_TOKEN.",
          );
        const response = await sendRequest(new URL("/v1/developers", flags.host).toString(), {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({
            ...(flags.email ? { email: flags.email } : {}),
            ...(flags.name ? { name: flags.name } : {}),
          }),
        });
        if (response.status !== 201) throw remoteError(response);
        const created = response.json<CreatedDeveloper>();
        // Only a token of the shape the host issues is shown (a server's "token" could carry lines
        // or escape codes of its own). The `platform login` line leaves it out: typed on a command
        // line, a token stays in the shell's history and shows in the process list to every user.
        if (!issuedToken(created.token, DEVELOPER_TOKEN_PREFIX))
          throw new PlatformError(
            "internal",
            "The host's answer carried a developer token of another shape than the host issues: is --host a platform host?",
          );
        printResult(
          flags.json === true,
          created,
          `developer ${created.id}${created.email ? ` (${created.email})` : ""} created\n` +
            `token: ${created.token} (shown once; give it to the developer)\n` +
            `  the developer signs in with this command, pasting the token when it asks: platform login --host ${flags.host}`,
        );
      }),
    );
}
