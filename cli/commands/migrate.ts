import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { printable, printableJson } from "../../sdk/protocol/index.js";
import { EXIT, runAction } from "../output.js";

/**
 * The source files under `dir`, and the symbolic links found there: a link is neither followed nor
 * rewritten (one to a folder outside the project had migrate rewrite that folder's files, and one
 * to `/` read every source file on the disk).
 */
function sourceFiles(dir: string, links: string[] = []): { files: string[]; links: string[] } {
  const files: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) continue;
    const stats = lstatSync(path);
    if (stats.isSymbolicLink()) links.push(path);
    else if (stats.isDirectory()) files.push(...sourceFiles(path, links).files);
    else if (stats.isFile() && /\.(ts|tsx|js|jsx|mts|mjs)$/.test(name) && !name.endsWith(".d.ts"))
      files.push(path);
  }
  return { files, links };
}

/** Writes `text` over the file at `path`, never through a link put in its place since it was read. */
function rewrite(path: string, text: string): void {
  const file = openSync(path, constants.O_WRONLY | constants.O_TRUNC | (constants.O_NOFOLLOW ?? 0));
  try {
    writeFileSync(file, text);
  } finally {
    closeSync(file);
  }
}

/** `platform migrate [dir]`: rewrites a legacy capsule to database API v1 in place. */
export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .argument("[dir]", "capsule folder whose server/ was written against platform/legacy", ".")
    .description(
      "rewrite a legacy (database API v0) capsule to v1: async handlers, awaited database calls, where/orderBy chains to withIndex with the indexes they need; lists by file and line what it could not rewrite (exit 1 then)",
    )
    .option("--dry-run", "print what would change without writing files")
    .option("--json", "print the report as one JSON document")
    .addHelpText(
      "after",
      "\nExamples:\n  platform migrate fixtures/legacy --dry-run\n  platform migrate . && platform deploy .",
    )
    .action((dirArg: string, flags: { dryRun?: boolean; json?: boolean }) =>
      runAction(async () => {
        const dir = resolve(dirArg);
        const server = join(dir, "server");
        if (!existsSync(server)) throw new Error(`No server/ folder in ${printable(dir)}.`);
        if (lstatSync(server).isSymbolicLink())
          throw new Error(
            `${printable(server)} is a symbolic link; migrate rewrites only a project's own files.`,
          );
        const found = sourceFiles(server);
        for (const link of found.links)
          process.stderr.write(`skipped ${printable(relative(dir, link))}: a symbolic link (not followed)\n`);
        const files = Object.fromEntries(
          found.files.map((path) => [relative(dir, path), readFileSync(path, "utf8")]),
        );
        const { migrateCapsule } = await import("../migrate/codemod.js");
        const result = migrateCapsule(files);
        const changed = result.files.filter((f) => f.changed);
        if (!flags.dryRun) for (const file of changed) rewrite(join(dir, file.file), file.text);
        if (flags.json) {
          // File names and notes quote the project: shown as text, escape codes and all.
          process.stdout.write(
            `${printableJson(
              {
                written: flags.dryRun ? [] : changed.map((f) => f.file),
                changed: changed.map((f) => f.file),
                indexes: result.indexes,
                rewrites: result.rewrites,
                unresolved: result.unresolved,
                callers: result.callers,
              },
              2,
            )}\n`,
          );
        } else {
          const lines = [
            `${flags.dryRun ? "would rewrite" : "rewrote"} ${changed.length} file${changed.length === 1 ? "" : "s"}: ${changed.map((f) => f.file).join(", ") || "none"} (${result.rewrites} handlers and database calls)`,
          ];
          for (const [table, indexes] of Object.entries(result.indexes))
            for (const [name, fields] of Object.entries(indexes))
              lines.push(`  index ${table}.${name} on [${fields.join(", ")}]`);
          if (result.callers.length > 0) {
            lines.push("callers must change:");
            for (const note of result.callers) lines.push(`  ${note.file}:${note.line}: ${note.message}`);
          }
          if (result.unresolved.length > 0) {
            lines.push("could not rewrite (finish these by hand):");
            for (const note of result.unresolved) lines.push(`  ${note.file}:${note.line}: ${note.message}`);
          } else lines.push("everything was rewritten; deploy to backfill the new indexes");
          process.stdout.write(`${lines.map(printable).join("\n")}\n`);
        }
        process.exit(result.unresolved.length > 0 ? EXIT.failure : EXIT.ok);
      }),
    );
}
