import { readFileSync } from "node:fs";
import { Command } from "commander";
import { registerAuth } from "./commands/auth.js";
import { registerBudget } from "./commands/budget.js";
import { registerDeploy } from "./commands/deploy.js";
import { registerDev } from "./commands/dev.js";
import { registerDevelopers } from "./commands/developers.js";
import { registerExport } from "./commands/export.js";
import { registerHost } from "./commands/host.js";
import { registerImport } from "./commands/import.js";
import { registerInit } from "./commands/init.js";
import { registerLogin } from "./commands/login.js";
import { registerLogs } from "./commands/logs.js";
import { registerMigrate } from "./commands/migrate.js";
import { registerStorage } from "./commands/storage/index.js";

function packageVersion(): string {
  for (const candidate of ["../package.json", "../../package.json"]) {
    try {
      return (JSON.parse(readFileSync(new URL(candidate, import.meta.url), "utf8")) as { version: string })
        .version;
    } catch {
      // try the next location: source and built layouts differ by one folder
    }
  }
  return "0.0.0";
}

/**
 * The `platform` command. Each command lives in its own module and registers itself here; exit
 * codes are 0 success, 1 failure, 2 usage (commander's usage errors are mapped to 2).
 */
export function createProgram(): Command {
  const program = new Command("platform")
    .description("Run capsules: a self-hostable backend with isolates, a document database and storage.")
    .version(packageVersion(), "-v, --version", "print the platform version")
    .showHelpAfterError("(run platform --help for usage)")
    .exitOverride((error) => {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version") process.exit(0);
      process.exit(error.exitCode === 0 ? 0 : 2);
    });
  registerDev(program);
  registerHost(program);
  registerDeploy(program);
  registerDevelopers(program);
  registerLogin(program);
  registerLogs(program);
  registerExport(program);
  registerImport(program);
  registerStorage(program);
  registerAuth(program);
  registerInit(program);
  registerBudget(program);
  registerMigrate(program);
  return program;
}
