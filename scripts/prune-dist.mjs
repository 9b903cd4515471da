// Removes from dist/ what tsc built from sources that are gone (a file deleted or renamed): tsc
// never cleans, and `npm pack` ships all of dist/. Only such leftovers go: dist/ is rebuilt in
// place while other processes may run from it (`npx ./platform` runs `prepare` during the tests).
// Run by `npm run build`, after tsc.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";

const OUTPUT = /(\.d\.ts\.map|\.d\.ts|\.js\.map|\.js)$/;

function prune(folder) {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) {
      prune(path);
      continue;
    }
    const base = relative("dist", path).replace(OUTPUT, "");
    if (base === relative("dist", path)) continue;
    if (![".ts", ".tsx", ".mts"].some((extension) => existsSync(`${base}${extension}`))) rmSync(path);
  }
}

for (const part of ["cli", "host", "runtime", "sdk"])
  if (existsSync(join("dist", part))) prune(join("dist", part));
