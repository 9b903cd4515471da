import { CommanderError } from "commander";
import { printable, printableJson } from "../sdk/protocol/index.js";
import { isPlatformError } from "../sdk/values/index.js";
import { colorsFor } from "./colors.js";

/** Exit codes of every command: 0 success, 1 failure, 2 usage. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/**
 * Prints an error for humans on stderr (no stack trace unless `verbose`) and returns its exit
 * code. A platform error is printed as `error: <code>: <message>`, the server's code first (or the
 * CLI's own, from the same list), so it can be looked up in docs/http-api.md and told apart from
 * others without reading the message (on a terminal, `error` is red). A commander error thrown by an action (an
 * `InvalidArgumentError` for flags that only conflict once all are known) is a usage error: exit 2.
 * The message is shown as text, its lines kept but indented after the first: a server's message
 * may quote what a tenant wrote (an import archive's file names), escape codes in it set the
 * terminal's clipboard or rewrote its lines (an attack review, 2026-12-06), and a line of its own
 * could pass for the CLI's (`deployed ...`, `error: ...`).
 */
export function reportError(error: unknown, verbose = false): number {
  const message = isPlatformError(error)
    ? `${error.code}: ${error.message}`
    : error instanceof Error
      ? error.message
      : String(error);
  process.stderr.write(`${colorsFor(process.stderr).red("error")}: ${indentedAfterFirst(message)}\n`);
  // The stack's first line is the message again: indented whole, none of its lines passes either.
  if (verbose && error instanceof Error && error.stack)
    process.stderr.write(`  ${indentedAfterFirst(error.stack)}\n`);
  return error instanceof CommanderError ? EXIT.usage : EXIT.failure;
}

/**
 * Runs a command's action and exits with {@link reportError}'s code when it fails, so every
 * command reports failures the same way.
 */
export function runAction(action: () => Promise<void>, verbose?: boolean): Promise<void> {
  return action().catch((error: unknown) => process.exit(reportError(error, verbose)));
}

/** {@link printableLines} with every line after the first indented by two spaces. */
export function indentedAfterFirst(text: string): string {
  return printableLines(text).replaceAll("\n", "\n  ");
}

/**
 * `text` with its lines kept and every other character a terminal would act on shown as its
 * escape ({@link printable}): what a server or a project sent is printed through it, as escape
 * codes in it set the terminal's clipboard or rewrote its lines.
 */
export function printableLines(text: string): string {
  return text.split("\n").map(printable).join("\n");
}

/**
 * Prints a command's result: `value` as one JSON line with `--json`, else the `human` text. Both
 * are shown as text ({@link printableJson}, {@link printableLines}): they quote what hosts and
 * tenants sent (a stored file's type, a deployment's table names, a count that is not one). Only
 * `colored` text, whose parts from elsewhere were made printable already, keeps its escape codes.
 */
export function printResult(json: boolean, value: unknown, human: string, colored = false): void {
  process.stdout.write(json ? `${printableJson(value)}\n` : `${colored ? human : printableLines(human)}\n`);
}

/** A byte count for humans: B, KiB or MiB. */
export function formatBytes(bytes: number): string {
  return bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** A limit in whole mebibytes, as the docs write it (`5 MiB`). */
export function formatMebibytes(bytes: number): string {
  return `${bytes / 1024 / 1024} MiB`;
}

/**
 * Prints a warning on stderr as `warning: <message>` (`warning` in yellow on a terminal), the
 * same shape as errors so both can be found with grep.
 */
export function printWarning(message: string): void {
  // A warning may quote a project's file names or a tenant's handler names: shown as text, its
  // lines after the first indented (as errors' are).
  process.stderr.write(`${colorsFor(process.stderr).yellow("warning")}: ${indentedAfterFirst(message)}\n`);
}

/**
 * `token` when it has the shape of a token the host issues (`prefix`, then letters, digits, `_`
 * and `-`), for the user to copy: the CLI pastes claim and developer tokens into command lines it
 * suggests (`curl ... -d '{"claimToken":"..."}'`), and a quote in a server's "token" put its own
 * commands into them. Undefined for anything else.
 */
export function issuedToken(token: unknown, prefix: string): string | undefined {
  return typeof token === "string" && new RegExp(`^${prefix}[A-Za-z0-9_-]{16,256}$`).test(token)
    ? token
    : undefined;
}

const ENGLISH_PLURALS = new Intl.PluralRules("en-US");

/**
 * A count with its noun in the right number, the count grouped as the docs write it: `1 file`,
 * `0 files`, `1,000 rows`. `pluralForm` defaults to `singular` + "s"; give it for other nouns
 * (`plural(n, "index", "indexes")`).
 */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n.toLocaleString("en-US")} ${ENGLISH_PLURALS.select(n) === "one" ? singular : pluralForm}`;
}
