import { Counter, Histogram, type Registry } from "prom-client";
import { type CallUsage, LIMITS } from "../../sdk/protocol/index.js";

/**
 * Latency buckets of one call, in seconds: from an inline point read (about a millisecond) up to
 * the wall-clock limit, past which no call lasts.
 */
const CALL_SECONDS_BUCKETS = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  LIMITS.handlerWallMs / 1000,
];

/** The read budgets a call can fail on with `limit_exceeded` (CPU time fails with `timeout`). */
const READ_BUDGETS = ["rowsReturned", "rowsRead", "bytesRead", "rangesRead"] as const;

/** One deployment's bound series for one kind of call. */
interface KindSeries {
  seconds: Histogram.Internal<"deployment" | "kind">;
  /** By status (`ok` or an error code), bound on first use. */
  statuses: Map<string, Counter.Internal>;
}

/**
 * Calls by deployment, kind and status, their latency, and the calls that failed on a read
 * budget. This is the hot path of the metrics: each deployment's label children are bound once
 * and kept (prom-client then only hashes the labels it was bound to), so a call costs a few map
 * lookups, one counter increment and one histogram observation.
 */
export class CallMetrics {
  private readonly calls: Counter<"deployment" | "kind" | "status">;
  private readonly seconds: Histogram<"deployment" | "kind">;
  private readonly budgetFailures: Counter<"deployment" | "budget">;
  private readonly byDeployment = new Map<string, Map<string, KindSeries>>();

  constructor(registry: Registry) {
    this.calls = new Counter({
      name: "platform_calls_total",
      help: "Queries, mutations and endpoint calls by deployment, kind and status (ok or the error code).",
      labelNames: ["deployment", "kind", "status"],
      registers: [registry],
    });
    this.seconds = new Histogram({
      name: "platform_call_duration_seconds",
      help: "Wall time of calls that ran (waiting for a slot, the database and the isolate included).",
      labelNames: ["deployment", "kind"],
      buckets: CALL_SECONDS_BUCKETS,
      registers: [registry],
    });
    this.budgetFailures = new Counter({
      name: "platform_budget_limit_failures_total",
      help: "Calls that failed by crossing a read budget (rowsReturned, rowsRead, bytesRead, rangesRead), or other for any other limit_exceeded (write budgets, bytes of range bounds, the handler's own).",
      labelNames: ["deployment", "budget"],
      registers: [registry],
    });
  }

  private series(deployment: string, kind: string): KindSeries {
    let kinds = this.byDeployment.get(deployment);
    if (!kinds) {
      kinds = new Map();
      this.byDeployment.set(deployment, kinds);
    }
    let series = kinds.get(kind);
    if (!series) {
      series = { seconds: this.seconds.labels(deployment, kind), statuses: new Map() };
      kinds.set(kind, series);
    }
    return series;
  }

  private count(series: KindSeries, deployment: string, kind: string, status: string): void {
    let counter = series.statuses.get(status);
    if (!counter) {
      counter = this.calls.labels(deployment, kind, status);
      series.statuses.set(status, counter);
    }
    counter.inc();
  }

  /** A call that ran and settled with `status` after `seconds`, having used `usage`. */
  settled(deployment: string, kind: string, status: string, seconds: number, usage: CallUsage): void {
    const series = this.series(deployment, kind);
    this.count(series, deployment, kind, status);
    series.seconds.observe(seconds);
    if (status === "limit_exceeded") this.budgetFailures.labels(deployment, crossedBudget(usage)).inc();
  }

  /** A call refused before it ran (no such handler, access denied, quarantined): counted, not timed. */
  refused(deployment: string, kind: string, status: string): void {
    this.count(this.series(deployment, kind), deployment, kind, status);
  }

  /** Drops every series of a deleted deployment, so deleted ids do not stay in every scrape. */
  forget(deployment: string): void {
    const kinds = this.byDeployment.get(deployment);
    if (!kinds) return;
    this.byDeployment.delete(deployment);
    for (const [kind, series] of kinds) {
      this.seconds.remove(deployment, kind);
      for (const status of series.statuses.keys()) this.calls.remove(deployment, kind, status);
    }
    for (const budget of [...READ_BUDGETS, "other"]) this.budgetFailures.remove(deployment, budget);
  }
}

/**
 * Which budget a `limit_exceeded` call crossed: the budget that stops a handler sets its usage to
 * the limit, so it is the first one used in full; `other` when none is (the handler threw the
 * code itself).
 */
function crossedBudget(usage: CallUsage): string {
  for (const key of READ_BUDGETS) if (usage[key] >= LIMITS[key]) return key;
  return "other";
}
