import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PlatformError } from "../sdk/values/index.js";
import { packageRoot } from "./bundle.js";

/** The fields of this package's `package.json` that `platform init` copies into an app. */
export interface OwnManifest {
  /** The TypeScript range this package builds with; apps type-check with the same one. */
  typescript: string;
  /**
   * npm's `allowScripts` for this package's own dependencies (the native addons): npm reads it
   * from the app's package.json only, and a future npm skips install scripts it does not list.
   */
  allowScripts: Record<string, boolean>;
}

/** What an app copies from this package's `package.json`. */
export function ownManifest(): OwnManifest {
  const manifest = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    allowScripts?: Record<string, boolean>;
  };
  const dependencies = manifest.dependencies ?? {};
  const allowScripts = Object.fromEntries(
    Object.entries(manifest.allowScripts ?? {}).filter(([name]) => name in dependencies),
  );
  return { typescript: dependencies.typescript ?? "^5", allowScripts };
}

/**
 * Packs the `platform` package this CLI runs from (a checkout or an installed copy) with
 * `npm pack` into `destination` and returns the tarball's file name. The package is not on the
 * npm registry under this name (`platform` there is someone else's), so an app depends on such a
 * tarball. Scripts are skipped: the CLI runs from the build being packed, so the app gets exactly
 * the platform the command came from, and an installed copy has nothing to build with.
 */
export function packOwnPackage(destination: string): string {
  const packed = spawnSync(
    "npm",
    ["pack", packageRoot(), "--ignore-scripts", "--json", "--pack-destination", destination],
    { encoding: "utf8", shell: process.platform === "win32" },
  );
  if (packed.status !== 0) {
    const reason = packed.error?.message ?? packed.stderr.trim();
    throw new PlatformError("internal", `npm pack of the platform package failed: ${reason}`);
  }
  const [first] = JSON.parse(packed.stdout) as Array<{ filename: string }>;
  if (!first) throw new PlatformError("internal", "npm pack of the platform package wrote no tarball.");
  return first.filename;
}
