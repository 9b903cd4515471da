import { type Command, InvalidArgumentError } from "commander";
import { readConfig, writeConfig } from "../config.js";
import { reportError, runAction } from "../output.js";

/** `platform auth as <name>`: the local guest identity for local commands. */
export function registerAuth(program: Command): void {
  const auth = program.command("auth").description("local identity settings");
  auth
    .command("as")
    .argument("<name>", "guest name: local commands act as guest:<name> (default guest:cli)")
    .description("set the local guest identity used by storage commands against the dev server")
    .addHelpText("after", "\nExamples:\n  platform auth as alice")
    .action((name: string) => {
      if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name))
        process.exit(
          reportError(
            new InvalidArgumentError("a guest name is 1-63 lowercase letters, digits, '_' or '-'."),
          ),
        );
      // A damaged config file is reported as every command reports an error, not as a stack trace.
      return runAction(async () => {
        const config = readConfig();
        config.guestName = name;
        writeConfig(config);
        process.stdout.write(`local commands now act as guest:${name}\n`);
      });
    });
}
