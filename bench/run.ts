/**
 * `npm run bench`: every benchmark with targets, one after another in ONE run (each in a process
 * of its own, with the Node flags the platform runs with), its output passed through; then one
 * table of every figure with its target and whether it is met, collected from the benchmarks'
 * target lines (bench/lib/targets.ts). Run one benchmark alone with `npm run bench:<name>`.
 *
 *   npm run bench            (BENCH_ONLY=suite,live runs a subset; knobs: docs/benchmarks.md)
 */
import { spawn } from "node:child_process";
import { benchNodeArgs } from "./lib/bench-node.js";
import { TARGET_PREFIX } from "./lib/targets.js";

/** The benchmarks with targets, in the order they run, and the script each runs. */
const BENCHMARKS: Array<{ name: string; script: string }> = [
  { name: "suite", script: "bench/suite/run.ts" },
  { name: "isolates", script: "bench/isolates/run.ts" },
  { name: "live", script: "bench/live/run.ts" },
  { name: "peers", script: "bench/peers/run.ts" },
  { name: "hosts", script: "bench/hosts/run.ts" },
  { name: "fairness", script: "bench/fairness/run.ts" },
];

/** Runs one benchmark, passing its output through; resolves with its target lines and exit code. */
function run(script: string): Promise<{ targets: string[]; code: number | null }> {
  const child = spawn(process.execPath, benchNodeArgs(script), {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const targets: string[] = [];
  let partial = "";
  child.stdout.on("data", (chunk: Buffer) => {
    process.stdout.write(chunk);
    const lines = (partial + chunk.toString()).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith(TARGET_PREFIX)) targets.push(line);
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ targets, code })));
}

const only = process.env.BENCH_ONLY?.split(",").map((name) => name.trim());
const rows: string[] = [];
const failed: string[] = [];
for (const { name, script } of BENCHMARKS) {
  if (only && !only.includes(name)) continue;
  process.stdout.write(`\n## bench/${name}\n\n`);
  const { targets, code } = await run(script);
  if (code !== 0) failed.push(`${name} (exit ${code})`);
  for (const line of targets) {
    const [figure, value, target, verdict] = line.slice(TARGET_PREFIX.length).split(" | ");
    rows.push(`| ${name} | ${figure} | ${value} | ${target} | ${verdict} |`);
  }
}
const met = rows.filter((row) => row.endsWith("| met |")).length;
const judged = rows.filter((row) => !row.endsWith("| no target |")).length;
console.log(
  [
    "",
    "## Every target",
    "",
    "| benchmark | figure | value | target | verdict |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
    "",
    `${met} of ${judged} targets met.${failed.length > 0 ? ` Failed to run: ${failed.join(", ")}.` : ""}`,
  ].join("\n"),
);
if (failed.length > 0) process.exitCode = 1;
