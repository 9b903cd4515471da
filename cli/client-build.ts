import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { build, type Plugin } from "esbuild";
import { PlatformError } from "../sdk/values/index.js";
import { entryUnlessInstalled, formatBuildError, packageRoot } from "./bundle.js";
import { projectFilesOnly } from "./project-files.js";

/** The entry files `platform dev` looks for in a capsule's `client/` folder, in this order. */
export const CLIENT_ENTRIES = ["main.tsx", "main.ts", "main.jsx", "main.js"] as const;

/** The capsule's client entry (`client/main.tsx`, ...), or undefined when it has none. */
export function clientEntry(capsuleDir: string): string | undefined {
  return CLIENT_ENTRIES.map((name) => join(resolve(capsuleDir), "client", name)).find((path) =>
    existsSync(path),
  );
}

/**
 * Resolves `platform/client` from this package when the capsule has no `node_modules/platform`,
 * and React from the capsule's folder, so the app and the client SDK share one copy of React.
 */
function clientResolvePlugin(capsuleDir: string): Plugin {
  const own = entryUnlessInstalled(capsuleDir, "client");
  return {
    name: "platform-client",
    setup(builder) {
      if (own) builder.onResolve({ filter: /^platform\/client$/ }, () => ({ path: own }));
      builder.onResolve({ filter: /^react(-dom)?(\/.*)?$/ }, async (args) => {
        if (args.pluginData === "react-from-capsule") return undefined;
        const found = await builder.resolve(args.path, {
          kind: args.kind,
          resolveDir: capsuleDir,
          pluginData: "react-from-capsule",
        });
        return found.errors.length > 0 ? undefined : { path: found.path };
      });
    },
  };
}

/**
 * Builds a capsule's browser client (`client/main.tsx` and what it imports, React included) into
 * `<outDir>/main.js`, which `platform dev` serves next to the files of `client/`. Returns the entry
 * built, or undefined when the capsule has no client entry. `production` (what `platform deploy`
 * uploads) minifies, builds React's production mode and writes no source map.
 */
export async function buildClientApp(
  capsuleDir: string,
  outDir: string,
  options: { production?: boolean } = {},
): Promise<string | undefined> {
  const mode = options.production === true ? "production" : "development";
  const dir = resolve(capsuleDir);
  const entry = clientEntry(dir);
  if (!entry) return undefined;
  try {
    await build({
      entryPoints: [entry],
      bundle: true,
      outfile: join(outDir, "main.js"),
      format: "esm",
      platform: "browser",
      target: "es2022",
      jsx: "automatic",
      // Not in production: a map would publish the app's sources, comments included.
      sourcemap: mode === "production" ? false : "linked",
      minify: mode === "production",
      define: { "process.env.NODE_ENV": JSON.stringify(mode) },
      logLevel: "silent",
      absWorkingDir: dir,
      // First: it checks where every import leads, what the other plugin resolves included.
      plugins: [projectFilesOnly(dir, [packageRoot()]), clientResolvePlugin(dir)],
    });
    return entry;
  } catch (error) {
    throw new PlatformError("bad_request", `Client build failed:\n${formatBuildError(error)}`);
  }
}
