import { BUDGET_WARNING_SHARE, BUDGETS, type BudgetKey, budgetShares } from "../../sdk/protocol/index.js";
import type { CallRecord } from "./log-line.js";

/** What to do about each budget, said in a call's warning line. */
const ADVICE: Record<BudgetKey, string> = {
  rowsReturned: "return fewer rows: take(n), or paginate() across calls",
  rowsRead:
    "read fewer index entries: an index with an equality prefix, take(n), paginate(), or counts stored next to the rows instead of count()",
  bytesRead: "read fewer or smaller rows: take(n), paginate(), or keep large values out of listed rows",
  rangesRead:
    "make fewer gets and scans: read related rows with one indexed query instead of a get per row, or spread the lookups over calls",
  cpuMs: "do less work per call: move heavy computation out of the handler or split it",
};

const BUDGET_KEYS = Object.keys(BUDGETS) as BudgetKey[];

/** The warning for a call above {@link BUDGET_WARNING_SHARE} of any budget, or undefined. */
export function budgetWarning(call: CallRecord): string | undefined {
  // Nearly every call is far below every budget: the shares are worked out only for a warning.
  const over = BUDGET_KEYS.filter((key) => call.usage[key] > BUDGETS[key] * BUDGET_WARNING_SHARE);
  if (over.length === 0) return undefined;
  const shares = budgetShares(call.usage);
  over.sort((a, b) => shares[b] - shares[a]);
  const used = over
    .map(
      (key) =>
        `${Math.round(shares[key] * 100)}% of ${key} (${Math.round(call.usage[key])} of ${BUDGETS[key]})`,
    )
    .join(", ");
  return `${call.kind} ${call.name} used ${used}: ${ADVICE[over[0] as BudgetKey]}.`;
}
