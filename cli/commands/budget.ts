import { resolve } from "node:path";
import type { Command } from "commander";
import { BUDGETS, budgetShares, printable, printableJson } from "../../sdk/protocol/index.js";
import { limitOf, limitOfMessage, type Measurement, READ_BUDGETS } from "../budget/analyze.js";
import type { BudgetReport, HandlerReport } from "../budget/harness.js";
import { checkSizes, loadScenario } from "../budget/scenario.js";
import { type Colors, colorsFor, noColors } from "../colors.js";
import { EXIT, formatBytes, plural, printableLines, reportError } from "../output.js";
import { formatTable } from "../table.js";

const number = (n: number) => n.toLocaleString("en-US");
const share = (n: number) => `${Math.round(n * 100)}%`;

/** "100", "100 and 1,000", "100, 1,000 and 2,000": the sizes at which something happened. */
function sizeList(sizes: number[]): string {
  const words = sizes.map(number);
  return words.length <= 1 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

/** One measurement's last column: ok, the read limit it crossed, or failed. */
function outcome(m: Measurement, c: Colors): string {
  if (m.ok) return c.green("ok");
  const limit = m.code === "limit_exceeded" ? limitOfMessage(m.message) : undefined;
  return c.red(limit ? `${limit} limit` : "failed");
}

/** The failures other than read limits, each once with every size it happened at. */
function failureLines(report: HandlerReport, c: Colors): string[] {
  const byError = new Map<string, number[]>();
  for (const e of report.verdict.errors) {
    // A handler's error quotes what the project threw: shown as text.
    const key = `${e.code}: ${printableLines(e.message)}`;
    byError.set(key, [...(byError.get(key) ?? []), e.size]);
  }
  const lines = [...byError].map(
    ([error, sizes]) => `  ${c.red("FAILED")} at ${sizeList(sizes)} rows per table: ${error}`,
  );
  if (lines.length > 0) {
    const given = report.argsFrom === "budget.json" ? "budget.json's arguments" : "arguments";
    const where =
      report.argsFrom === "type"
        ? " (from its argument type)"
        : report.argsFrom === "none"
          ? " (its argument type says nothing usable)"
          : "";
    lines.push(
      `  called with ${given} ${printableJson(report.args)}${where}; give others in budget.json as "calls": { "${report.name}": { "args": ... } }, or skip it with { "skip": true }`,
    );
  }
  return lines;
}

/**
 * One handler for humans: its name and arguments, a table with a row per size (figures with their
 * share of each limit), then its growth and verdict. `c` colours the verdicts (off when piped).
 */
export function formatHandler(report: HandlerReport, c: Colors = noColors): string {
  const args =
    report.argsFrom === "none" || JSON.stringify(report.args) === "{}"
      ? ""
      : c.dim(
          `  args ${printableJson(report.args)} (from ${report.argsFrom === "type" ? "its type" : "budget.json"})`,
        );
  const lines = [`${c.bold(`${report.kind} ${report.name}`)}${args}`];
  const rows = report.measurements.map((m) => {
    const s = budgetShares(m.usage);
    return [
      number(m.size),
      `${number(m.usage.rowsReturned)} (${share(s.rowsReturned)})`,
      `${number(m.usage.rowsRead)} (${share(s.rowsRead)})`,
      `${formatBytes(m.usage.bytesRead)} (${share(s.bytesRead)})`,
      `${number(m.usage.rangesRead)} (${share(s.rangesRead)})`,
      number(m.usage.writes),
      m.usage.cpuMs.toFixed(1),
      outcome(m, c),
    ];
  });
  lines.push(
    formatTable({
      head: ["ROWS", "RETURNED", "READ", "BYTES READ", "GETS+SCANS", "WRITES", "CPU MS", "RESULT"].map((h) =>
        c.dim(h),
      ),
      rows,
      align: ["right", "right", "right", "right", "right", "right", "right", "left"],
      indent: 2,
    }),
  );
  const v = report.verdict;
  const growth = READ_BUDGETS.map((b) => `${b} ${v.growth[b]}`).join(", ");
  lines.push(`  growth: ${growth}`);
  if (v.exceeds)
    lines.push(
      `  ${c.red("EXCEEDS")} ${v.exceeds.budget} (limit ${number(limitOf(v.exceeds.budget))}) at ${plural(v.exceeds.size, "row")} per table`,
    );
  else if (v.predicted)
    lines.push(
      `  ${c.yellow("will exceed")} ${v.predicted.budget} (limit ${number(limitOf(v.predicted.budget))}) at about ${plural(v.predicted.size, "row")} per table`,
    );
  lines.push(...failureLines(report, c));
  if (!v.exceeds && !v.predicted && v.errors.length === 0)
    lines.push(`  ${c.green("ok")}: stays within every budget`);
  if (v.advice) lines.push(`  advice: ${v.advice}`);
  return lines.join("\n");
}

/** The closing lines: what exceeded, what failed, what was skipped. */
function summary(report: BudgetReport, c: Colors): string[] {
  const out: string[] = [];
  if (report.skipped.length > 0) out.push(`skipped: ${report.skipped.map(printable).join(", ")}`);
  const over = report.handlers.filter((h) => h.verdict.exceeds).map((h) => h.name);
  if (over.length > 0)
    out.push(
      c.red(
        `${plural(over.length, "handler")} ${over.length === 1 ? "exceeds" : "exceed"} a limit within these sizes: ${over.join(", ")}`,
      ),
    );
  if (report.failed.length > 0) {
    out.push(c.red(`${plural(report.failed.length, "handler")} failed: ${report.failed.join(", ")}`));
    // A handler that refuses the arguments made for it (another user's row, say) is correct code.
    out.push(
      `  a failed handler says nothing about its budgets: give it arguments in budget.json ("calls": { "<name>": { "args": ... } }, with "$id:<table>", "$user"...), or skip it ("skip": true); see docs/capsules.md, "Before production"`,
    );
  }
  if (over.length === 0 && report.failed.length === 0)
    out.push(c.green("no handler exceeds a limit within these sizes"));
  return out;
}

/** The whole report for humans. */
export function formatReport(report: BudgetReport, c: Colors = noColors): string {
  const seeded =
    report.seededBy === "schema" ? "rows generated from the schema" : `seeded by ${report.seededBy.mutation}`;
  return [
    `platform budget: ${printable(report.dir)}`,
    `sizes: ${report.sizes.map(number).join(", ")} rows per table (${seeded}); caller: ${report.caller}`,
    `limits per call: ${plural(BUDGETS.rowsReturned, "row")} returned, ${plural(BUDGETS.rowsRead, "row")} read, ${formatBytes(BUDGETS.bytesRead)} read, ${number(BUDGETS.rangesRead)} gets and index scans`,
    "",
    ...report.handlers.map((h) => `${formatHandler(h, c)}\n`),
    ...summary(report, c),
  ].join("\n");
}

/** `platform budget [dir]`: which handlers will hit the read budgets, and at what table size. */
export function registerBudget(program: Command): void {
  program
    .command("budget")
    .argument("[dir]", "capsule folder (with server/index.ts and optionally budget.json)", ".")
    .description(
      "seed a throw-away database at growing sizes, call every query and mutation, and report each one's use of the read budgets, how it grows, and where it will exceed a limit (exit 1 if one exceeds a limit or fails)",
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
          if (progress) process.stderr.write(`\r\u001b[2K${printable(message)}`);
        });
        if (progress) process.stderr.write("\r\u001b[2K");
        process.stdout.write(
          flags.json
            ? `${printableJson(report, 2)}\n`
            : `${formatReport(report, colorsFor(process.stdout))}\n`,
        );
        process.exit(report.exceeded || report.failed.length > 0 ? EXIT.failure : EXIT.ok);
      } catch (error) {
        process.exit(reportError(error));
      }
    });
}
