/**
 * The budget harness behind `platform budget`: deploys a capsule into a throw-away database, grows
 * its tables to each size, calls every query and mutation, and records what each call used.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { noUsage, type PlatformHost, startHost, UNLIMITED_BUDGET } from "../../host/index.js";
import type { BridgeIdentity, CallUsage, QuerySpec } from "../../sdk/protocol/index.js";
import { isPlatformError, type SchemaSpec } from "../../sdk/values/index.js";
import { bundleCapsule } from "../bundle.js";
import { type HandlerVerdict, judge, type Measurement } from "./analyze.js";
import { inferArgs } from "./infer-args.js";
import { type BudgetScenario, fillArgs } from "./scenario.js";
import { SEED_USERS } from "./seed.js";
import { type HostDeployments, seedFromSchema, seedWithMutation } from "./seeding.js";

/**
 * Where a handler's arguments came from: budget.json's `calls.<name>.args`, its declared argument
 * type, or neither (it was called with `{}`).
 */
export type ArgsSource = "budget.json" | "type" | "none";

/** One handler's measurements and verdict. */
export interface HandlerReport {
  kind: "query" | "mutation";
  name: string;
  /** The arguments it was called with, before placeholders were filled in for each size. */
  args: unknown;
  argsFrom: ArgsSource;
  measurements: Measurement[];
  verdict: HandlerVerdict;
}

/** What `platform budget` reports. */
export interface BudgetReport {
  dir: string;
  sizes: number[];
  seededBy: "schema" | { mutation: string };
  caller: BudgetScenario["caller"];
  handlers: HandlerReport[];
  skipped: string[];
  /** True when a handler crossed a limit within the sizes run (the command then exits 1). */
  exceeded: boolean;
  /**
   * Handlers that failed other than on a read limit (bad arguments, a thrown error, a refused
   * caller) at some size: the report cannot vouch for them, so the command exits 1.
   */
  failed: string[];
}

const DEPLOYMENT = "budget";

function identityOf(caller: BudgetScenario["caller"]): BridgeIdentity | null {
  if (caller === "anonymous") return null;
  if (caller === "guest") return { userId: "guest:budget", kind: "guest" };
  return { userId: SEED_USERS[0] as string, kind: "account", email: "budget@example.com" };
}

const byCreation = (table: string): QuerySpec => ({ table, index: "by_creation", range: [], order: "asc" });

/**
 * Runs the harness on the capsule in `dir`. `onProgress` hears what is happening (sizes seeded,
 * calls made) for a progress display.
 */
export async function runBudget(
  dir: string,
  scenario: BudgetScenario,
  onProgress: (message: string) => void = () => {},
): Promise<BudgetReport> {
  const { code, entry } = await bundleCapsule(dir);
  onProgress("reading the handlers' argument types");
  const typed = argsFromTypes(entry);
  const data = await mkdtemp(join(tmpdir(), "platform-budget-"));
  let host: PlatformHost | undefined;
  try {
    // A throw-away host on a free loopback port: the same composition as `platform dev`, quiet.
    host = await startHost({
      data,
      port: 0,
      domain: "localhost",
      adminToken: randomBytes(24).toString("hex"),
      devDeployment: DEPLOYMENT,
      logDestination: false,
      logCalls: false,
      requestQuota: false,
    });
    const { deployments } = host;
    const record = await deployments.deploy(DEPLOYMENT, { code });
    const schema: SchemaSpec = record.declaration.schema;
    const database = await host.database.deployment(DEPLOYMENT);
    const identity = identityOf(scenario.caller);
    for (const table of Object.keys(scenario.rows))
      if (!schema.tables[table])
        throw new Error(`budget.json: rows names table ${table}, which the schema lacks.`);
    const handlers = [
      ...record.declaration.queries.map((name) => ({ kind: "query" as const, name })),
      ...record.declaration.mutations.map((name) => ({ kind: "mutation" as const, name })),
    ];
    const known = new Set(handlers.map((h) => h.name));
    for (const name of Object.keys(scenario.calls))
      if (!known.has(name))
        throw new Error(`budget.json: calls names ${name}, which is not a query or mutation.`);
    if (scenario.seed && !record.declaration.mutations.includes(scenario.seed))
      throw new Error(`budget.json: seed names ${scenario.seed}, which is not a mutation.`);
    const skipped = handlers
      .filter((h) => scenario.calls[h.name]?.skip || h.name === scenario.seed)
      .map((h) => h.name);
    const measured = handlers
      .filter((h) => !skipped.includes(h.name))
      .map((h) => ({ ...h, ...argsOf(h.name, scenario, typed) }));
    const results = new Map<string, Measurement[]>(measured.map((h) => [h.name, []]));
    const ids = new Map<string, string[]>();
    const seededTables = new Set<string>();
    const count = (table: string) =>
      database
        .query((tx) => tx.query(byCreation(table), { kind: "count" }), { budget: UNLIMITED_BUDGET })
        .then((r) => (r.value.kind === "count" ? r.value.count : 0));

    for (const size of scenario.sizes) {
      onProgress(`seeding ${size} rows per table`);
      if (scenario.seed)
        await seedWithMutation(
          deployments,
          DEPLOYMENT,
          scenario.seed,
          size,
          schema,
          count,
          identity,
          seededTables,
        );
      else await seedFromSchema(database, schema, scenario, size, count, ids);
      const firstIds = new Map<string, string>();
      for (const table of Object.keys(schema.tables)) {
        const first = await database.query((tx) => tx.query(byCreation(table), { kind: "first" }), {
          budget: UNLIMITED_BUDGET,
        });
        if (first.value.kind === "row" && first.value.row)
          firstIds.set(table, (JSON.parse(first.value.row) as { id: string }).id);
      }
      for (const handler of measured) {
        onProgress(`${size} rows: ${handler.kind} ${handler.name}`);
        let argsJson: string;
        try {
          argsJson = JSON.stringify(
            fillArgs(handler.args, {
              size,
              user: identity?.userId ?? null,
              now: Date.now(),
              idOf: (table) => firstIds.get(table),
            }),
          );
        } catch (error) {
          // A placeholder without a value (`$id:t` of an empty table) fails this call, not the run.
          const message = (error as Error).message;
          (results.get(handler.name) as Measurement[]).push({
            size,
            ok: false,
            usage: ZERO,
            code: "bad_request",
            message,
          });
          continue;
        }
        (results.get(handler.name) as Measurement[]).push(
          await measure(deployments, handler.kind, handler.name, argsJson, identity, size),
        );
      }
    }
    const reports = measured.map((h) => {
      const measurements = results.get(h.name) as Measurement[];
      return { ...h, measurements, verdict: judge(measurements) };
    });
    return {
      dir,
      sizes: scenario.sizes,
      seededBy: scenario.seed ? { mutation: scenario.seed } : "schema",
      caller: scenario.caller,
      handlers: reports,
      skipped,
      exceeded: reports.some((r) => r.verdict.exceeds !== undefined),
      failed: reports.filter((r) => r.verdict.errors.length > 0).map((r) => r.name),
    };
  } finally {
    await host?.close();
    await rm(data, { recursive: true, force: true });
  }
}

/**
 * The arguments the handlers' declared types give, by name; none when the checker cannot read the
 * file (the bundle built, so a failure here is the checker's, and budget.json or `{}` still work).
 */
function argsFromTypes(entry: string): Map<string, unknown> {
  try {
    return inferArgs(entry);
  } catch {
    return new Map();
  }
}

/** A handler's arguments: budget.json's first, then its declared type's, else `{}`. */
function argsOf(
  name: string,
  scenario: BudgetScenario,
  typed: Map<string, unknown>,
): { args: unknown; argsFrom: ArgsSource } {
  const given = scenario.calls[name]?.args;
  if (given !== undefined) return { args: given, argsFrom: "budget.json" };
  if (typed.has(name)) return { args: typed.get(name), argsFrom: "type" };
  return { args: {}, argsFrom: "none" };
}

const ZERO: CallUsage = { ...noUsage(), cpuMs: 0, wallMs: 0 };

/** One call: its usage, or its failure with the usage up to the failure (from the call log). */
async function measure(
  deployments: HostDeployments,
  kind: "query" | "mutation",
  name: string,
  argsJson: string,
  identity: BridgeIdentity | null,
  size: number,
): Promise<Measurement> {
  let usage = ZERO;
  const stop = deployments.logs.follow(DEPLOYMENT, (line) => {
    if (line.call && line.call.name === name) usage = line.call.usage;
  });
  try {
    const result = await deployments.call(DEPLOYMENT, { kind, name, argsJson, identity });
    return { size, ok: true, usage: result.usage };
  } catch (error) {
    const code = isPlatformError(error) ? error.code : "internal";
    const message = (error as Error)?.message ?? String(error);
    return { size, ok: false, usage, code, message };
  } finally {
    stop();
  }
}
