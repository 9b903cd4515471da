/**
 * Whose TypeScript `platform dev`'s type check runs: the capsule's own, from exactly
 * `<dir>/node_modules/typescript`, else the CLI's; never one found in a parent folder, which another
 * user of the machine may have planted (`/tmp/node_modules/typescript` above a project in `/tmp`).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { TypeCheckResult, TypeCheckSetup } from "./typecheck.js";

let parent: string;
let app: string;

/** A capsule with one deliberate type error, so a working check has something to report. */
beforeEach(async () => {
  parent = await mkdtemp(join(tmpdir(), "platform-typecheck-"));
  app = join(parent, "app");
  await mkdir(join(app, "server"), { recursive: true });
  await writeFile(join(app, "server", "index.ts"), 'export const answer: number = "forty-two";\n');
});
afterEach(() => rm(parent, { recursive: true, force: true }));

/**
 * A `typescript` package in `folder/node_modules` that records that it ran (in `marker`), then
 * passes for the real one, as a planted copy would to go unnoticed.
 */
async function plantTypeScript(folder: string, marker: string): Promise<void> {
  const real = createRequire(import.meta.url).resolve("typescript");
  const dir = join(folder, "node_modules", "typescript");
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: "typescript", main: "index.js" }));
  await writeFile(
    join(dir, "index.js"),
    `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran");\nmodule.exports = require(${JSON.stringify(real)});\n`,
  );
}

/**
 * Runs cli/typecheck-worker.ts as `startTypeCheck` does (a worker thread given a
 * {@link TypeCheckSetup}) until its first result. From source, the worker is loaded through tsx,
 * since Node 20 starts no `.ts` worker of itself (`startTypeCheck` starts the built `.js`).
 */
async function firstCheck(setup: TypeCheckSetup): Promise<TypeCheckResult> {
  const root = new URL("../", import.meta.url).href;
  const tsx = pathToFileURL(join(process.cwd(), "node_modules", "tsx", "dist", "esm", "api", "index.mjs"));
  const source = `import { tsImport } from ${JSON.stringify(tsx.href)};\nawait tsImport("./cli/typecheck-worker.ts", ${JSON.stringify(root)});\n`;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
    workerData: setup,
  });
  try {
    return await new Promise<TypeCheckResult>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
  } finally {
    await worker.terminate();
  }
}

const ERROR = /^server\/index\.ts:1:14 - error TS2322: Type 'string' is not assignable to type 'number'\.$/;

it("does not load a typescript package planted in a parent folder, and still checks", async () => {
  const marker = join(parent, "planted-ran");
  await plantTypeScript(parent, marker);
  const result = await firstCheck({ dir: app, entry: join(app, "server", "index.ts") });
  expect(existsSync(marker)).toBe(false);
  expect(result.errorCount).toBe(1);
  expect(result.diagnostics).toEqual([expect.stringMatching(ERROR)]);
}, 60_000);

it("uses the capsule's own typescript from its node_modules", async () => {
  const marker = join(parent, "own-ran");
  await plantTypeScript(app, marker);
  const result = await firstCheck({ dir: app, entry: join(app, "server", "index.ts") });
  expect(existsSync(marker)).toBe(true);
  expect(result.diagnostics).toEqual([expect.stringMatching(ERROR)]);
}, 60_000);

it("writes no build info where the project's tsconfig.json points it", async () => {
  // `incremental` or `composite` writes a `.tsbuildinfo` even with `noEmit`: a template's
  // `tsBuildInfoFile: "../../.bashrc"` replaced that file with TypeScript's JSON (an attack review).
  const victim = join(parent, "victim.txt");
  await writeFile(victim, "keep me");
  // Still checked as configured: `composite` with `declarationMap` needs both (turned off, they
  // made one option error hide every real one: a review).
  for (const option of [{ incremental: true }, { composite: true, declarationMap: true }]) {
    await writeFile(
      join(app, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { strict: true, ...option, tsBuildInfoFile: "../victim.txt" } }),
    );
    const result = await firstCheck({ dir: app, entry: join(app, "server", "index.ts") });
    expect(result.diagnostics).toEqual([expect.stringMatching(ERROR)]);
    expect(await readFile(victim, "utf8")).toBe("keep me");
  }
}, 60_000);
