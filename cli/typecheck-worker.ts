/**
 * The background type check of `platform dev`, on a worker thread: TypeScript's watch API
 * (`createWatchProgram`) re-checks the capsule whenever its files change and posts each result
 * ({@link TypeCheckResult}) to `platform dev`, which prints it. A thread of its own, because a check
 * runs synchronously for seconds and must hold up neither requests nor redeploys.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import type TypeScript from "typescript";
import type { TypeCheckResult, TypeCheckSetup } from "./typecheck.js";

const setup = workerData as TypeCheckSetup;

/**
 * The capsule's own TypeScript when it installs one (its version is the one its editor uses), else
 * ours. Only from exactly `<dir>/node_modules/typescript`: Node's lookup would also search every
 * parent folder, and a package another user planted there (`/tmp/node_modules` above a project in
 * `/tmp`) would run as the developer.
 */
function loadTypeScript(dir: string): typeof TypeScript {
  const require = createRequire(import.meta.url);
  const own = join(dir, "node_modules", "typescript");
  try {
    // An absolute path is loaded from that folder alone, never searched for.
    if (existsSync(join(own, "package.json"))) return require(own) as typeof TypeScript;
  } catch {
    // A broken install: check with ours rather than not at all.
  }
  return require("typescript") as typeof TypeScript;
}

const ts = loadTypeScript(setup.dir);

/** `server/index.ts:12:5 - error TS2322: ...`: relative to the capsule folder, as editors link it. */
function formatDiagnostic(diagnostic: TypeScript.Diagnostic): string {
  const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
  const kind = `${ts.DiagnosticCategory[diagnostic.category].toLowerCase()} TS${diagnostic.code}`;
  if (!diagnostic.file || diagnostic.start === undefined) return `${kind}: ${text}`;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const file = relative(setup.dir, diagnostic.file.fileName);
  return `${file}:${line + 1}:${character + 1} - ${kind}: ${text}`;
}

/**
 * What a capsule without a `tsconfig.json` is checked with: strict, for the isolate's language
 * level (no DOM, no Node types), and `platform/*` resolved to this package when the capsule does
 * not install it (as the bundler does).
 */
function defaultOptions(): TypeScript.CompilerOptions {
  return {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2024.d.ts"],
    types: [],
    ...(setup.paths ? { paths: setup.paths } : {}),
  };
}

let found: string[] = [];
const reportDiagnostic = (diagnostic: TypeScript.Diagnostic) => {
  found.push(formatDiagnostic(diagnostic));
};
// Called with an error count once each check is done ("Found 2 errors. Watching for file changes.").
const reportStatus = (
  _status: TypeScript.Diagnostic,
  _newLine: string,
  _options: TypeScript.CompilerOptions,
  errorCount?: number,
) => {
  if (errorCount === undefined) return;
  const result: TypeCheckResult = { errorCount, diagnostics: found };
  found = [];
  parentPort?.postMessage(result);
};

const config = join(setup.dir, "tsconfig.json");
/**
 * Options laid over the capsule's `tsconfig.json`: never emit, and `platform/*` resolved to this
 * package while the capsule does not install it (a fresh `platform init` before `npm install`),
 * unless the config maps paths of its own, which are left alone.
 */
function overConfig(): TypeScript.CompilerOptions {
  const raw = ts.readConfigFile(config, ts.sys.readFile).config as
    | { compilerOptions?: { paths?: unknown } }
    | undefined;
  return setup.paths && raw?.compilerOptions?.paths === undefined
    ? { noEmit: true, paths: setup.paths }
    : { noEmit: true };
}

/**
 * TypeScript's file system, but writing nothing: `incremental` and `composite` write build info
 * despite `noEmit`, where the config's `tsBuildInfoFile` says, and a template's `"../../.bashrc"`
 * replaced that file (an attack review). Turning the two options off instead made configs that
 * need them (`composite` with `declarationMap`) fail with one option error and no other.
 */
const readOnlySystem: TypeScript.System = {
  ...ts.sys,
  writeFile: () => {},
  createDirectory: () => {},
};

if (existsSync(config)) {
  ts.createWatchProgram(
    ts.createWatchCompilerHost(
      config,
      overConfig(),
      readOnlySystem,
      ts.createSemanticDiagnosticsBuilderProgram,
      reportDiagnostic,
      reportStatus,
    ),
  );
} else {
  ts.createWatchProgram(
    ts.createWatchCompilerHost(
      [setup.entry],
      defaultOptions(),
      readOnlySystem,
      ts.createSemanticDiagnosticsBuilderProgram,
      reportDiagnostic,
      reportStatus,
    ),
  );
}
