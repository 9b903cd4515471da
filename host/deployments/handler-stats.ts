import type { HandlerFigures, MinuteFigures, StatsAnswer } from "../../sdk/protocol/index.js";
import { BUDGETS, type BudgetKey, type CallUsage, LIMITS } from "../../sdk/protocol/index.js";

const MINUTE_MS = 60_000;
/** Wall-time histogram: bin `i` ends at `FIRST_EDGE_MS * 2^((i + 1) / BINS_PER_DOUBLING)`. */
const FIRST_EDGE_MS = 0.1;
const BINS_PER_DOUBLING = 3;
/** 0.1 ms to 104 s (beyond the wall limit); the last bin takes anything longer. */
const BINS = 20 * BINS_PER_DOUBLING;
const BUDGET_KEYS = Object.keys(BUDGETS) as BudgetKey[];

/** The histogram bin of a wall time. */
function binOf(ms: number): number {
  if (!(ms > FIRST_EDGE_MS)) return 0;
  const bin = Math.floor(Math.log2(ms / FIRST_EDGE_MS) * BINS_PER_DOUBLING);
  return Math.min(BINS - 1, bin);
}

/** A bin's representative time: the geometric middle of its range (within 12% of any time in it). */
function binMs(bin: number): number {
  return FIRST_EDGE_MS * 2 ** ((bin + 0.5) / BINS_PER_DOUBLING);
}

/** The time below which `share` of the counted calls fell, from a histogram. */
function percentile(bins: Uint32Array, total: number, share: number): number {
  if (total === 0) return 0;
  const rank = Math.max(1, Math.ceil(total * share));
  let seen = 0;
  for (let bin = 0; bin < bins.length; bin++) {
    seen += bins[bin] as number;
    if (seen >= rank) return Math.round(binMs(bin) * 100) / 100;
  }
  return binMs(BINS - 1);
}

/** The largest share of any budget (and of the wall limit) a call used. */
export function largestShare(usage: CallUsage): number {
  let largest = usage.wallMs / LIMITS.handlerWallMs;
  for (const key of BUDGET_KEYS) largest = Math.max(largest, usage[key] / BUDGETS[key]);
  return largest;
}

/** One minute of one handler: counts, the largest share, and a wall-time histogram. */
class Minute {
  calls = 0;
  failures = 0;
  maxShare = 0;
  readonly bins = new Uint32Array(BINS);
  constructor(readonly start: number) {}
}

/** One handler's last {@link LIMITS.handlerStatsMinutes} minutes, a ring indexed by minute. */
class HandlerSeries {
  readonly minutes: Array<Minute | undefined> = new Array(LIMITS.handlerStatsMinutes);
  constructor(readonly kind: string) {}

  at(start: number): Minute {
    const slot = (start / MINUTE_MS) % this.minutes.length;
    let minute = this.minutes[slot];
    if (minute?.start !== start) {
      minute = new Minute(start);
      this.minutes[slot] = minute;
    }
    return minute;
  }
}

/**
 * Per-handler figures of the last hour for the dashboard, kept in memory by this host process
 * (each host counts the calls it ran): per minute, calls, failures, the largest budget share and
 * a wall-time histogram (3 bins per doubling), from which p50 and p99 are read. Bounded: 60
 * minutes of at most {@link LIMITS.handlerStatsHandlers} handlers per deployment, each minute a
 * fixed 240-byte histogram allocated only when a call lands in it.
 */
export class HandlerStats {
  private readonly deployments = new Map<string, Map<string, HandlerSeries>>();

  constructor(private readonly clock: () => number = Date.now) {}

  /** Counts one finished call of `handler`. */
  record(deployment: string, handler: string, kind: string, failed: boolean, usage: CallUsage): void {
    let handlers = this.deployments.get(deployment);
    if (!handlers) {
      handlers = new Map();
      this.deployments.set(deployment, handlers);
    }
    let series = handlers.get(handler);
    if (!series) {
      if (handlers.size >= LIMITS.handlerStatsHandlers) return;
      series = new HandlerSeries(kind);
      handlers.set(handler, series);
    }
    const minute = series.at(Math.floor(this.clock() / MINUTE_MS) * MINUTE_MS);
    minute.calls++;
    if (failed) minute.failures++;
    minute.maxShare = Math.max(minute.maxShare, largestShare(usage));
    const bin = binOf(usage.wallMs);
    minute.bins[bin] = (minute.bins[bin] as number) + 1;
  }

  /** Forgets a deleted deployment's figures. */
  purgeDeployment(deployment: string): void {
    this.deployments.delete(deployment);
  }

  /** The figures of `deployment` over the last hour, handlers by name. */
  summary(deployment: string): StatsAnswer {
    const now = this.clock();
    const current = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    const since = current - (LIMITS.handlerStatsMinutes - 1) * MINUTE_MS;
    const handlers: HandlerFigures[] = [];
    for (const [handler, series] of this.deployments.get(deployment) ?? []) {
      const minutes = series.minutes
        .filter((minute): minute is Minute => minute !== undefined && minute.start >= since)
        .sort((a, b) => a.start - b.start);
      if (minutes.length === 0) continue;
      const all = new Uint32Array(BINS);
      let calls = 0;
      let failures = 0;
      let maxShare = 0;
      const figures: MinuteFigures[] = minutes.map((minute) => {
        for (let bin = 0; bin < BINS; bin++) all[bin] = (all[bin] as number) + (minute.bins[bin] as number);
        calls += minute.calls;
        failures += minute.failures;
        maxShare = Math.max(maxShare, minute.maxShare);
        return {
          minute: minute.start,
          calls: minute.calls,
          failures: minute.failures,
          p50Ms: percentile(minute.bins, minute.calls, 0.5),
          p99Ms: percentile(minute.bins, minute.calls, 0.99),
          maxShare: minute.maxShare,
        };
      });
      handlers.push({
        handler,
        kind: series.kind,
        calls,
        failures,
        p50Ms: percentile(all, calls, 0.5),
        p99Ms: percentile(all, calls, 0.99),
        maxShare,
        minutes: figures,
      });
    }
    handlers.sort((a, b) => a.handler.localeCompare(b.handler));
    return { deployment, since, now, handlers };
  }
}
