import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** The runtime's code and its content hash (part of every code cache's key). */
export interface RuntimeScript {
  code: string;
  hash: string;
}

let cached: Promise<RuntimeScript> | undefined;

/** Finds runtime/index.ts (source checkout) or runtime/index.js (built package). */
function runtimeEntry(): string {
  for (const candidate of ["../../runtime/index.ts", "../../runtime/index.js"]) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error("The isolate runtime (runtime/index) is missing from this installation.");
}

/**
 * The runtime as ONE strict script, bundled once per process. The host loads it as a built script,
 * never imports it as source: the runtime has no Node APIs and must run in a bare V8 context.
 */
export function loadRuntimeScript(): Promise<RuntimeScript> {
  cached ??= build({
    entryPoints: [runtimeEntry()],
    bundle: true,
    write: false,
    format: "iife",
    platform: "neutral",
    target: "es2022",
    minify: false,
    legalComments: "none",
    // Strict whatever tsconfig esbuild finds beside the entry (an installed package may ship
    // none): a sloppy function's `caller` and `arguments` let capsule code called from the
    // runtime (a getter, a valueOf) climb to the runtime's frames and take the real built-ins a
    // bound holds (found by review, in a bundle made without the tsconfig).
    banner: { js: '"use strict";' },
  }).then((result) => {
    const code = result.outputFiles[0]?.text ?? "";
    return { code, hash: createHash("sha256").update(code).digest("hex") };
  });
  return cached;
}
