// Builds the dashboard's browser bundle (dashboard/main.tsx, React included) into
// dist/dashboard/assets/ with content-hashed names, and writes dist/dashboard/manifest.json, which
// the host reads to serve them (host/http/dashboard-assets.ts). Run by `npm run build`.
import { mkdir, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "dashboard");
await rm(out, { recursive: true, force: true });
await mkdir(join(out, "assets"), { recursive: true });
const result = await build({
  entryPoints: { app: join(root, "dashboard", "main.tsx") },
  bundle: true,
  outdir: join(out, "assets"),
  entryNames: "[name]-[hash]",
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  minify: true,
  legalComments: "none",
  define: { "process.env.NODE_ENV": '"production"' },
  metafile: true,
  logLevel: "warning",
});
const files = Object.keys(result.metafile.outputs).map((path) => basename(path));
const js = files.find((name) => name.endsWith(".js"));
const css = files.find((name) => name.endsWith(".css"));
if (!js || !css) throw new Error(`The dashboard build made no script or stylesheet: ${files.join(", ")}`);
await writeFile(join(out, "manifest.json"), `${JSON.stringify({ js, css, files }, null, 2)}\n`);
console.log(`dashboard: ${files.join(", ")}`);
