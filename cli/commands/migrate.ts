import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { printable, printableJson } from "../../sdk/protocol/index.js";
import { EXIT, runAction } from "../output.js";

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) continue;
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|tsx|js|jsx|mts|mjs)$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
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
        if (!existsSync(server)) throw new Error(`No server/ folder in ${dir}.`);
        const files = Object.fromEntries(
          sourceFiles(server).map((path) => [relative(dir, path), readFileSync(path, "utf8")]),
        );
        const { migrateCapsule } = await import("../migrate/codemod.js");
        const result = migrateCapsule(files);
        const changed = result.files.filter((f) => f.changed);
        if (!flags.dryRun) for (const file of changed) writeFileSync(join(dir, file.file), file.text);
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
