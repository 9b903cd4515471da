/**
 * `npm run bench:<name>`: runs one benchmark script in a process of its own with the platform's Node
 * flags (bench/lib/bench-node.ts), its output passed through, and exits as it did.
 *
 *   node --import tsx bench/run-one.ts bench/isolates/run.ts
 */
import { spawn } from "node:child_process";
import { benchNodeArgs } from "./lib/bench-node.js";

const [script] = process.argv.slice(2);
if (!script) {
  process.stderr.write("usage: node --import tsx bench/run-one.ts <bench script>\n");
  process.exit(2);
}
const child = spawn(process.execPath, benchNodeArgs(script), { stdio: "inherit" });
child.on("close", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
