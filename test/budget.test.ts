/**
 * `platform budget` on fixture capsules (the built CLI, a throw-away database each run): a
 * `collect()` on a growing table is flagged at the size where it fails, an indexed `take(20)` is
 * constant, a broad `count()` runs out of rows read while returning none (docs/limits.md), a
 * handler that throws or gets the wrong arguments fails the run, arguments come from the declared
 * types, the exit code follows, and `platform dev` warns about calls above half a budget.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { BudgetReport } from "../cli/budget/harness.js";
import { sendRequest } from "../cli/http.js";
import { runCliAsync, startDev } from "./helpers/cli.js";

const handler = (report: BudgetReport, name: string) => {
  const found = report.handlers.find((h) => h.name === name);
  if (!found) throw new Error(`no handler ${name} in the report`);
  return found;
};

describe("platform budget", () => {
  it("flags collect() at the size it fails, keeps take(20) constant, and trips rowsRead before rowsReturned", async () => {
    const run = await runCliAsync(["budget", "fixtures/budget", "--json"]);
    expect(run.status, run.stderr).toBe(1);
    const report = JSON.parse(run.stdout) as BudgetReport;
    expect(report).toMatchObject({ sizes: [100, 1000, 2000, 6000], seededBy: "schema", exceeded: true });
    expect(report.skipped).toEqual(["seedRows"]);

    const everything = handler(report, "everything");
    expect(everything.verdict.exceeds).toEqual({
      budget: "rowsReturned",
      size: 2000,
      message: "collect() exceeded the 1000 row return limit. Use paginate().",
    });
    expect(everything.measurements.map((m) => m.ok)).toEqual([true, true, false, false]);
    expect(everything.verdict.advice).toContain("paginate()");

    const recent = handler(report, "recent");
    expect(recent.verdict.growth).toEqual({
      rowsReturned: "constant",
      rowsRead: "constant",
      bytesRead: "constant",
      rangesRead: "constant",
    });
    expect(recent.verdict.exceeds).toBeUndefined();
    expect(recent.verdict.predicted).toBeUndefined();
    expect(recent.measurements.at(-1)?.usage).toMatchObject({ rowsReturned: 20, rangesRead: 1 });

    const total = handler(report, "total");
    expect(total.verdict.exceeds).toMatchObject({ budget: "rowsRead", size: 6000 });
    const tripped = total.measurements.at(-1);
    expect(tripped).toMatchObject({ ok: false, message: "Database rowsRead limit exceeded (5000)." });
    expect(tripped?.usage).toMatchObject({ rowsRead: 5000, rowsReturned: 0 });
    expect(total.verdict.advice).toContain("store counts");

    const mine = handler(report, "mine");
    expect(mine.verdict.growth.rowsReturned).toBe("linear");
    expect(mine.verdict.predicted).toEqual({ budget: "rowsReturned", size: 10_000 });
    expect(handler(report, "add").measurements.every((m) => m.ok && m.usage.writes === 1)).toBe(true);
  }, 120_000);

  it("prints a table for humans, and exits 0 when nothing exceeds within the sizes asked for", async () => {
    const human = await runCliAsync(["budget", "fixtures/budget"]);
    expect(human.status).toBe(1);
    expect(human.stdout).toContain("query everything");
    expect(human.stdout).toMatch(/1,000 +1,000 \(100%\) +1,000 \(20%\) .* ok\n/);
    expect(human.stdout).toMatch(/6,000 +0 \(0%\) +5,000 \(100%\) .* rowsRead limit\n/);
    expect(human.stdout).toContain("EXCEEDS rowsReturned (limit 1,000) at 2,000 rows per table");
    expect(human.stdout).toContain("will exceed rowsReturned (limit 1,000) at about 10,000 rows per table");
    expect(human.stdout).toContain("2 handlers exceed a limit within these sizes: everything, total");
    const small = await runCliAsync(["budget", "fixtures/budget", "--sizes", "10,200"]);
    expect(small.status, small.stderr).toBe(0);
    expect(small.stdout).toContain("no handler exceeds a limit within these sizes");
  }, 120_000);

  it("seeds with the capsule's own seed mutation when the scenario names one", async () => {
    const run = await runCliAsync([
      "budget",
      "fixtures/budget",
      "--scenario",
      "fixtures/budget/budget-seeded.json",
      "--json",
    ]);
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as BudgetReport;
    expect(report.seededBy).toEqual({ mutation: "seedRows" });
    expect(report.skipped).toEqual(["seedRows"]);
    // seedRows makes one item per list: the tables hold 400 rows each at the last size.
    expect(handler(report, "everything").measurements.at(-1)?.usage.rowsReturned).toBeGreaterThanOrEqual(400);
    expect(handler(report, "everything").verdict.predicted?.budget).toBe("rowsReturned");
  }, 120_000);

  it("reports a handler that fails as failed, with its error, and exits 1 unless budget.json skips it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-budget-failing-"));
    try {
      await mkdir(join(dir, "server"));
      await writeFile(
        join(dir, "server", "index.ts"),
        `import { boolean, capsule, type Id, string, table } from "platform/server";
export default capsule({
  schema: { notes: table({ text: string(), done: boolean() }) },
  queries: {
    boom: async () => { throw new Error("boom: the handler threw"); },
    one: async (ctx, args: { id: Id<"notes"> }) => ctx.db.notes.get(args.id),
    untyped: async (ctx, args) => ctx.db.notes.get(args.id.trim()),
  },
  mutations: {
    write: async (ctx, args: { text: string; done: boolean; tags?: string[] }) =>
      ctx.db.notes.insert({ text: args.text, done: args.done }),
  },
});
`,
      );
      const run = await runCliAsync(["budget", dir, "--sizes", "10,20", "--json"]);
      expect(run.status, run.stderr).toBe(1);
      const report = JSON.parse(run.stdout) as BudgetReport;
      expect(report.exceeded).toBe(false);
      expect(report.failed).toEqual(["boom", "untyped"]);
      expect(handler(report, "boom").verdict.errors).toEqual([
        { size: 10, code: "handler_error", message: expect.stringContaining("boom: the handler threw") },
        { size: 20, code: "handler_error", message: expect.stringContaining("boom: the handler threw") },
      ]);
      // Arguments from the declared types: an id of a seeded row, and every required field.
      expect(handler(report, "one")).toMatchObject({ args: { id: "$id:notes" }, argsFrom: "type" });
      expect(handler(report, "one").measurements.map((m) => m.ok)).toEqual([true, true]);
      expect(handler(report, "write")).toMatchObject({
        args: { text: "text", done: false },
        argsFrom: "type",
      });
      expect(handler(report, "write").measurements.every((m) => m.ok && m.usage.writes === 1)).toBe(true);
      expect(handler(report, "untyped")).toMatchObject({ args: {}, argsFrom: "none" });

      const human = await runCliAsync(["budget", dir, "--sizes", "10,20"]);
      expect(human.status).toBe(1);
      expect(human.stdout).toMatch(
        /FAILED at 10 and 20 rows per table: handler_error: .*boom: the handler threw/,
      );
      expect(human.stdout).toContain("2 handlers failed: boom, untyped");
      expect(human.stdout).toContain('give it arguments in budget.json ("calls"');

      await writeFile(
        join(dir, "budget.json"),
        JSON.stringify({ calls: { boom: { skip: true }, untyped: { args: { id: "$id:notes" } } } }),
      );
      const skipped = await runCliAsync(["budget", dir, "--sizes", "10,20"]);
      expect(skipped.status, skipped.stdout).toBe(0);
      expect(skipped.stdout).toContain("skipped: boom");
      expect(skipped.stdout).toContain("no handler exceeds a limit within these sizes");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("refuses a bad scenario with a message saying what is wrong (exit 2)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-budget-bad-"));
    try {
      const file = join(dir, "bad.json");
      for (const [scenario, message] of [
        [{ sizes: [100, 10] }, "sizes must be in increasing order"],
        [{ sizes: "lots" }, "sizes must be a list of whole numbers"],
        [{ caller: "robot" }, 'caller must be "account", "guest" or "anonymous"'],
        [{ extra: 1 }, 'unknown member "extra"'],
      ] as const) {
        await writeFile(file, JSON.stringify(scenario));
        const run = await runCliAsync(["budget", "fixtures/budget", "--scenario", file]);
        expect(run.status).toBe(2);
        expect(run.stderr).toContain(message);
      }
      await writeFile(file, JSON.stringify({ calls: { nope: {} } }));
      const unknown = await runCliAsync(["budget", "fixtures/budget", "--scenario", file]);
      expect(unknown.status).toBe(1);
      expect(unknown.stderr).toContain("calls names nope, which is not a query or mutation");
      expect((await runCliAsync(["budget", "fixtures/budget", "--sizes", "5,x"])).stderr).toContain(
        "--sizes: sizes must be a list of whole numbers",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

it("platform dev warns when a call uses more than half of a budget", async () => {
  const { dev, port } = await startDev("fixtures/budget");
  try {
    const base = `http://localhost:${port}`;
    const guest = (
      await sendRequest(`${base}/__platform/auth/guest`, { method: "POST", body: '{"name":"budget"}' })
    ).json<{ token: string }>().token;
    const call = (kind: string, name: string, args: unknown) =>
      sendRequest(`${base}/api/${kind}/${name}`, {
        method: "POST",
        headers: { authorization: `Bearer ${guest}` },
        body: JSON.stringify(args),
      });
    expect((await call("mutation", "seedRows", { count: 300 })).status).toBe(200);
    expect((await call("query", "everything", {})).status).toBe(200);
    expect(dev.output()).not.toContain("warning: query everything");
    expect((await call("mutation", "seedRows", { count: 300 })).status).toBe(200);
    expect((await call("query", "everything", {})).status).toBe(200);
    await dev.waitFor(
      /warning: query everything used 60% of rowsReturned \(600 of 1000\): return fewer rows/,
    );
  } finally {
    await dev.stop();
  }
}, 60_000);
