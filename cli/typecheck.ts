import { existsSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { entryUnlessInstalled, ownEntry, packageRoot } from "./bundle.js";
import { type Colors, noColors } from "./colors.js";
import { plural, printableLines } from "./output.js";

/** What the type-check worker is started with. */
export interface TypeCheckSetup {
  /** The capsule folder; its `tsconfig.json`, when it has one, says what is checked and how. */
  dir: string;
  /** Checked from here when the capsule has no `tsconfig.json`. */
  entry: string;
  /** Where `platform/*` resolves when the capsule does not install the package. */
  paths?: Record<string, string[]>;
}

/** One finished check: its error count and every diagnostic, formatted. */
export interface TypeCheckResult {
  errorCount: number;
  diagnostics: string[];
}

/**
 * What `platform/<module>` is checked against when the capsule does not install the package: its
 * built declarations, as an installed package's are (with `skipLibCheck` the capsule's options
 * then never apply to the SDK's own code), else its source.
 */
function declarations(module: "server" | "client" | "legacy"): string {
  const built = join(packageRoot(), "dist", "sdk", module, "index.d.ts");
  return existsSync(built) ? built : ownEntry(module);
}

/**
 * Starts checking the capsule in `dir` on a worker thread, again whenever its files change, and
 * calls `onResult` after each check; `onError` if the checker itself fails. Returns the function
 * that stops it. See cli/typecheck-worker.ts.
 */
export function startTypeCheck(
  dir: string,
  entry: string,
  onResult: (result: TypeCheckResult) => void,
  onError: (error: unknown) => void,
): () => Promise<void> {
  const setup: TypeCheckSetup = entryUnlessInstalled(dir, "server")
    ? {
        dir,
        entry,
        paths: {
          "platform/server": [declarations("server")],
          "platform/legacy": [declarations("legacy")],
          "platform/client": [declarations("client")],
        },
      }
    : { dir, entry };
  const worker = new Worker(new URL("./typecheck-worker.js", import.meta.url), { workerData: setup });
  worker.on("message", (result: TypeCheckResult) => onResult(result));
  worker.on("error", onError);
  worker.unref();
  return async () => {
    await worker.terminate();
  };
}

/**
 * A check's result for the terminal: `type check: no errors`, or `type check: 2 errors` followed
 * by each diagnostic (`server/index.ts:12:5 - error TS2322: ...`), shown as text: a diagnostic
 * quotes the project's source (a module name holding escape codes rewrote the line to read
 * `type check: no errors`), and a project may be anyone's.
 */
export function formatTypeCheck(result: TypeCheckResult, c: Colors = noColors): string {
  if (result.errorCount === 0 && result.diagnostics.length === 0) return "type check: no errors";
  const head = `type check: ${c.red(plural(result.errorCount, "error"))}`;
  return [head, ...result.diagnostics.map((d) => `  ${printableLines(d)}`)].join("\n");
}
