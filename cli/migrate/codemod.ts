/**
 * `platform migrate`'s codemod: rewrites a legacy capsule (`platform/legacy`, database API v0) to
 * database API v1 (`platform/server`) with the TypeScript compiler API, and lists by file and line
 * what it could not rewrite. It edits text spans found by walking the syntax tree, so everything
 * it does not touch keeps its formatting and comments.
 */
import type ts from "typescript";
import { FileCodemod } from "./file-codemod.js";
import type { FileRewrite, MigrationNote } from "./source-edits.js";

/** The whole capsule's result. */
export interface CodemodResult {
  files: FileRewrite[];
  /** Indexes added to the schema: table -> index name -> fields. */
  indexes: Record<string, Record<string, string[]>>;
  /** Handlers made async and database calls awaited. */
  rewrites: number;
  /** What could not be rewritten (the author must finish it). */
  unresolved: MigrationNote[];
  /** Changes callers must make (positional mutation arguments became an object). */
  callers: MigrationNote[];
}

/**
 * Rewrites the legacy capsule made of `files` (path -> source). Handlers anywhere are rewritten
 * first, so the schema (wherever `app({...})` is) gets every index their queries need.
 */
export function migrateCapsule(files: Record<string, string>): CodemodResult {
  const indexes: Record<string, Record<string, string[]>> = {};
  const mods = Object.entries(files).map(([file, text]) => new FileCodemod(file, text, indexes));
  const apps: Array<{ mod: FileCodemod; call: ts.CallExpression }> = [];
  for (const mod of mods) {
    const found = mod.legacyImport();
    if (!found) continue;
    mod.imports(found.declaration);
    if (found.app) for (const call of mod.appCalls(found.app)) apps.push({ mod, call });
  }
  for (const { mod, call } of apps) mod.handlers(call);
  for (const { mod, call } of apps) mod.schema(call);
  const result: CodemodResult = {
    files: mods.map((mod) => mod.result()),
    indexes,
    rewrites: mods.reduce((sum, mod) => sum + mod.rewrites, 0),
    unresolved: mods.flatMap((mod) => mod.unresolved),
    callers: mods.flatMap((mod) => mod.callers),
  };
  if (apps.length === 0)
    result.unresolved.push({
      file: Object.keys(files)[0] ?? "server/index.ts",
      line: 1,
      message: 'No legacy capsule found: nothing imports app from "platform/legacy".',
    });
  return result;
}
