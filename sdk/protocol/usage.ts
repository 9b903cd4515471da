import { LIMITS } from "./limits.js";

/** What one handler execution used: the read budgets, scans, writes and time. */
export interface CallUsage {
  rowsReturned: number;
  rowsRead: number;
  bytesRead: number;
  /** Gets by id and index scans, found or not: what the `rangesRead` limit counts. */
  rangesRead: number;
  indexScans: number;
  writes: number;
  /** CPU time of the handler in its isolate. */
  cpuMs: number;
  /** Wall time of the whole call, database waits included. */
  wallMs: number;
}

/** Every figure of a {@link CallUsage}, by name: what a log line's usage must hold. */
export const CALL_USAGE_FIGURES = [
  "rowsReturned",
  "rowsRead",
  "bytesRead",
  "rangesRead",
  "indexScans",
  "writes",
  "cpuMs",
  "wallMs",
] as const satisfies ReadonlyArray<keyof CallUsage>;

/** The per-handler limits a {@link CallUsage} is measured against, by name. */
export const BUDGETS = {
  rowsReturned: LIMITS.rowsReturned,
  rowsRead: LIMITS.rowsRead,
  bytesRead: LIMITS.bytesRead,
  rangesRead: LIMITS.rangesRead,
  cpuMs: LIMITS.handlerCpuMs,
} as const;

/** One of the {@link BUDGETS}. */
export type BudgetKey = keyof typeof BUDGETS;

/** Share of each budget a call used (0..1, more when it failed by crossing it). */
export function budgetShares(usage: CallUsage, limits: Record<BudgetKey, number> = BUDGETS) {
  const shares = {} as Record<BudgetKey, number>;
  for (const key of Object.keys(BUDGETS) as BudgetKey[]) shares[key] = usage[key] / limits[key];
  return shares;
}

/** A call crossing this share of any budget gets a warning (dev server, logs). */
export const BUDGET_WARNING_SHARE = 0.5;
