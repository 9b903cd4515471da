import { resolve } from "node:path";
import type { Command } from "commander";
import { BUDGETS, budgetShares } from "../../sdk/protocol/index.js";
import type { HandlerReport } from "../budget/harness.js";
import { checkSizes, loadScenario } from "../budget/scenario.js";
import { EXIT, formatBytes, reportError } from "../output.js";

const number = (n: number) => n.toLocaleString("en-US");
const share = (n: number) => `${Math.round(n * 100)}%`;

function cell(value: string, width: number): string {
  return value.padEnd(width);
}

/** One handler as a table: a row per size, then its growth and verdict. */
export function formatHandler(report: HandlerReport): string {
  const lines = [`${report.kind} ${report.name}`];
  lines.push(
    `  ${cell("rows", 10)}${cell("returned", 16)}${cell("read", 16)}${cell("bytes read", 20)}${cell("scans", 7)}${cell("writes", 8)}cpu ms`,
  );
  for (const m of report.measurements) {
    if (!m.ok && m.code !== "limit_exceeded") {
      lines.push(`  ${cell(number(m.size), 10)}failed (${m.code}): ${m.message}`);
      continue;
    }
    const s = budgetShares(m.usage);
    lines.push(
      `  ${cell(number(m.size), 10)}${cell(`${number(m.usage.rowsReturned)} (${share(s.rowsReturned)})`, 16)}${cell(
        `${number(m.usage.rowsRead)} (${share(s.rowsRead)})`,
        16,
      )}${cell(`${formatBytes(m.usage.bytesRead)} (${share(s.bytesRead)})`, 20)}${cell(String(m.usage.indexScans), 7)}${cell(
        String(m.usage.writes),
        8,
      )}${m.usage.cpuMs.toFixed(1)}${m.ok ? "" : `  FAILED: ${m.message}`}`,
    );
  }
  const v = report.verdict;
  const growth = (["rowsReturned", "rowsRead", "bytesRead"] as const)
    .map((b) => `${b} ${v.growth[b]}`)
    .join(", ");
  lines.push(`  growth: ${growth}`);
  if (v.exceeds)
    lines.push(
      `  EXCEEDS ${v.exceeds.budget} (limit ${number(BUDGETS[v.exceeds.budget])}) at ${number(v.exceeds.size)} rows per table`,
    );
  else if (v.predicted)
    lines.push(
      `  will exceed ${v.predicted.budget} (limit ${number(BUDGETS[v.predicted.budget])}) at about ${number(v.predicted.size)} rows per table`,
    );
  else if (v.errors.length === 0) lines.push("  ok: stays within every budget");
  if (v.advice) lines.push(`  advice: ${v.advice}`);
  return lines.join("\n");
}

/** `platform budget [dir]`: which handlers will hit the read budgets, and at what table size. */
export function registerBudget(program: Command): void {
  program
    .command("budget")
    .argument("[dir]", "capsule folder (with server/index.ts and optionally budget.json)", ".")
    .description(
      "seed a throw-away database at growing sizes, call every query and mutation, and report each one's use of the read budgets, how it grows, and where it will exceed a limit (exit 1 if it does)",
    )
    .option("--sizes <list>", "rows per table, comma-separated (default: budget.json's, else 100,1000,10000)")
    .option("--scenario <file>", "scenario file (default: <dir>/budget.json)")
    .option("--json", "print the report as one JSON document")
    .addHelpText(
      "after",
      "\nExamples:\n  platform budget fixtures/todo\n  platform budget . --sizes 100,1000,10000,100000 --json",
    )
    .action(async (dirArg: string, flags: { sizes?: string; scenario?: string; json?: boolean }) => {
      const dir = resolve(dirArg);
      let scenario: ReturnType<typeof loadScenario>["scenario"];
      try {
        scenario = loadScenario(dir, flags.scenario && resolve(flags.scenario)).scenario;
        if (flags.sizes !== undefined)
          scenario.sizes = checkSizes(
            flags.sizes.split(",").map((s) => Number(s.trim())),
            "--sizes",
          );
      } catch (error) {
        reportError(error);
        process.exit(EXIT.usage);
      }
      try {
        const { runBudget } = await import("../budget/harness.js");
        const progress = process.stderr.isTTY && !flags.json;
        const report = await runBudget(dir, scenario, (message) => {
          if (progress) process.stderr.write(`\r\u001b[2K${message}`);
        });
        if (progress) process.stderr.write("\r\u001b[2K");
        if (flags.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
        else {
          const seeded =
            report.seededBy === "schema"
              ? "rows generated from the schema"
              : `seeded by ${report.seededBy.mutation}`;
          const out = [
            `platform budget: ${dir}`,
            `sizes: ${report.sizes.map(number).join(", ")} rows per table (${seeded}); caller: ${report.caller}`,
            `limits per call: ${number(BUDGETS.rowsReturned)} rows returned, ${number(BUDGETS.rowsRead)} rows read, ${formatBytes(BUDGETS.bytesRead)} read`,
            "",
            ...report.handlers.map((h) => `${formatHandler(h)}\n`),
          ];
          if (report.skipped.length > 0) out.push(`skipped: ${report.skipped.join(", ")}`);
          const over = report.handlers.filter((h) => h.verdict.exceeds).map((h) => h.name);
          out.push(
            over.length > 0
              ? `${over.length} handler${over.length === 1 ? "" : "s"} exceed a limit within these sizes: ${over.join(", ")}`
              : "no handler exceeds a limit within these sizes",
          );
          process.stdout.write(`${out.join("\n")}\n`);
        }
        process.exit(report.exceeded ? EXIT.failure : EXIT.ok);
      } catch (error) {
        process.exit(reportError(error));
      }
    });
}
