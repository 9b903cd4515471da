import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { PlatformError } from "../sdk/values/index.js";
import { projectFilesOnly } from "./project-files.js";

/** The root of this `platform` package (source checkout or installed package). */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "sdk"))) return dir;
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "dist", "sdk"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("Cannot find the platform package root.");
    dir = parent;
  }
}

/**
 * `platform/server`, `platform/client` (browser entry) or `platform/legacy` from this package: its
 * TypeScript source in a checkout, its build otherwise.
 */
export function ownEntry(module: "server" | "client" | "legacy"): string {
  const root = packageRoot();
  const source = join(root, "sdk", module, "index.ts");
  return existsSync(source) ? source : join(root, "dist", "sdk", module, "index.js");
}

/**
 * Where `platform/<module>` resolves for a capsule: undefined when the capsule installs the
 * `platform` package itself (esbuild finds it there), else this package's own entry.
 */
export function entryUnlessInstalled(capsuleDir: string, module: "server" | "client"): string | undefined {
  return existsSync(join(capsuleDir, "node_modules", "platform", "package.json"))
    ? undefined
    : ownEntry(module);
}

/** esbuild's errors as one message, each with its file, line and column. */
export function formatBuildError(error: unknown): string {
  const errors = (
    error as {
      errors?: Array<{ text: string; location?: { file: string; line: number; column: number } | null }>;
    }
  ).errors;
  return errors?.length
    ? errors
        .map((e) =>
          e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ${e.text}` : e.text,
        )
        .join("\n")
    : String((error as Error).message);
}

function platformServerPlugin(capsuleDir: string): Plugin {
  const own = entryUnlessInstalled(capsuleDir, "server");
  return {
    name: "platform-server",
    setup(builder) {
      if (own) builder.onResolve({ filter: /^platform\/server$/ }, () => ({ path: own }));
      if (own) builder.onResolve({ filter: /^platform\/legacy$/ }, () => ({ path: ownEntry("legacy") }));
      builder.onResolve(
        { filter: /^node:|^(fs|path|os|child_process|net|http|https|crypto|process|worker_threads)$/ },
        (args) => ({
          errors: [
            { text: `Capsules run in an isolate without Node.js APIs; ${args.path} is not available.` },
          ],
        }),
      );
    },
  };
}

/** A bundled capsule, ready to deploy. */
export interface CapsuleBundle {
  code: string;
  entry: string;
  /**
   * The bundle's source map (JSON, sources relative to the capsule folder, no contents): how
   * `platform dev` turns a handler's stack into `server/index.ts:12:5`. Never deployed.
   */
  sourceMap: string;
}

/** The capsule's entry file in `dir` (`server/index.ts`, or `.js`, `.mts`), or undefined when it has none. */
export function capsuleEntry(dir: string): string | undefined {
  return ["index.ts", "index.js", "index.mts"]
    .map((name) => join(resolve(dir), "server", name))
    .find((path) => existsSync(path));
}

/**
 * Bundles `<dir>/server/index.ts` (with `platform/server`) into one script that defines the global
 * `__platform_capsule`, which the isolate runtime reads. Build errors come back as one clear message.
 */
export async function bundleCapsule(dir: string): Promise<CapsuleBundle> {
  const capsuleDir = resolve(dir);
  const entry = capsuleEntry(capsuleDir);
  if (!entry)
    throw new PlatformError(
      "bad_request",
      `No server/index.ts in ${capsuleDir}: a capsule folder needs one that exports default capsule({...}).`,
    );
  try {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      format: "iife",
      globalName: "__platform_capsule",
      platform: "neutral",
      mainFields: ["module", "main"],
      conditions: ["import", "default"],
      target: "es2022",
      logLevel: "silent",
      absWorkingDir: capsuleDir,
      // First: it checks where every import leads, what the other plugins resolve included.
      plugins: [projectFilesOnly(capsuleDir, [packageRoot()]), platformServerPlugin(capsuleDir)],
      // Not written (write: false); it places the map's sources relative to the capsule folder.
      outfile: join(capsuleDir, "capsule.js"),
      // External: the map stays out of the bundle that is deployed (no sourceMappingURL comment).
      sourcemap: "external",
      sourcesContent: false,
    });
    const output = (suffix: string) => result.outputFiles.find((f) => f.path.endsWith(suffix))?.text ?? "";
    return { code: output("capsule.js"), entry, sourceMap: output("capsule.js.map") };
  } catch (error) {
    throw new PlatformError("bad_request", `Build failed:\n${formatBuildError(error)}`);
  }
}
