import { type CallUsage, LIMITS } from "../../sdk/protocol/index.js";

/** The read budgets the harness judges growth on (CPU is shown, but too noisy to extrapolate). */
export const READ_BUDGETS = ["rowsReturned", "rowsRead", "bytesRead", "rangesRead"] as const;
export type ReadBudget = (typeof READ_BUDGETS)[number];
/**
 * A read limit a call can fail on: the budgets above, and the bytes of its keys and range bounds,
 * which no usage figure shows (a call crosses it with a few huge bounds, not by growing).
 */
export type ReadLimit = ReadBudget | "rangeBytesRead";

/** The per-call limit of a read limit. */
export function limitOf(limit: ReadLimit): number {
  return LIMITS[limit];
}

/** How a figure grows with table size. */
export type Growth = "constant" | "sublinear" | "linear" | "superlinear";

/** One call of one handler at one table size. */
export type Measurement =
  | { size: number; ok: true; usage: CallUsage }
  | { size: number; ok: false; usage: CallUsage; code: string; message: string };

/** What the harness concludes about one handler. */
export interface HandlerVerdict {
  growth: Record<ReadBudget, Growth>;
  /** The worst growth over the read budgets. */
  overall: Growth;
  /** The first size at which the handler failed on a read limit. */
  exceeds?: { budget: ReadLimit; size: number; message: string };
  /** Where a growing figure would reach its limit, when it did not within the sizes run. */
  predicted?: { budget: ReadBudget; size: number };
  /** Failures other than read limits (bad arguments, thrown errors). */
  errors: Array<{ size: number; code: string; message: string }>;
  /** What to do, in the documentation's words, when a limit is or will be crossed. */
  advice?: string;
}

const ORDER: Growth[] = ["constant", "sublinear", "linear", "superlinear"];
/** How far beyond the largest size tried a crossing is still predicted. */
const PREDICTION_HORIZON = 1000;

/** Which read limit a `limit_exceeded` message names (docs/capsules.md "Errors"), if any. */
export function limitOfMessage(message: string): ReadLimit | undefined {
  if (/^collect\(\) exceeded the \d+ row return limit/.test(message)) return "rowsReturned";
  const named = /^Database (rowsReturned|rowsRead|bytesRead|rangesRead|rangeBytesRead) limit exceeded/.exec(
    message,
  )?.[1];
  return named as ReadLimit | undefined;
}

/** The two largest sizes at which a figure is non-zero: where its growth shows. */
function tail(points: Array<{ size: number; value: number }>) {
  const used = points.filter((p) => p.value > 0);
  return { used, first: used.at(-2), last: used.at(-1) };
}

/**
 * The growth of `points` (size -> figure): the exponent k of figure ~ size^k between the two
 * largest sizes where the figure is non-zero (a bounded `take(20)` still grows between small sizes,
 * then stops). Figures that stop changing are constant.
 */
export function classifyGrowth(points: Array<{ size: number; value: number }>): Growth {
  const { used, first, last } = tail(points);
  if (!first || !last) {
    // Zero everywhere, or only the last size uses it: no trend to speak of unless it appeared.
    return used.length === 1 && points.length > 1 && points[0]?.value === 0 ? "linear" : "constant";
  }
  if (last.value <= first.value * 1.2) return "constant";
  const k = Math.log(last.value / first.value) / Math.log(last.size / first.size);
  if (k < 0.15) return "constant";
  if (k < 0.7) return "sublinear";
  if (k <= 1.3) return "linear";
  return "superlinear";
}

/** The size at which a figure growing like its last two points reaches `limit`. */
function extrapolate(points: Array<{ size: number; value: number }>, limit: number): number | undefined {
  const { first, last } = tail(points);
  if (!first || !last || last.size === first.size || last.value <= first.value) return undefined;
  const k = Math.log(last.value / first.value) / Math.log(last.size / first.size);
  if (k <= 0) return undefined;
  return last.size * (limit / last.value) ** (1 / k);
}

/** Two significant figures, for predictions ("about 12,000 rows"). */
export function roughly(n: number): number {
  const magnitude = 10 ** Math.max(0, Math.floor(Math.log10(n)) - 1);
  return Math.round(n / magnitude) * magnitude;
}

const ADVICE: Record<ReadLimit, string> = {
  rowsReturned:
    "return fewer rows: take(n) for a bounded list, paginate() across calls for a growing one (collect() is for small, bounded sets)",
  rowsRead:
    "read fewer index entries: query an index with an equality prefix instead of a broad range, bound it with take(n) or paginate(), and for totals store counts (for example per UTC day) next to the rows, updated in the same mutation, instead of count()",
  bytesRead:
    "read fewer or smaller rows: take(n) or paginate(), and keep large values out of rows that are listed",
  rangesRead:
    "make fewer gets and index scans per call: read related rows with one indexed query instead of a get per row, and spread loops of lookups over calls with paginate()",
  rangeBytesRead:
    "use shorter keys and range bounds: compare index fields with short values (ids, numbers, short strings), not large text",
};

/** Judges one handler from its measurements, in increasing size order. */
export function judge(measurements: Measurement[]): HandlerVerdict {
  const sorted = [...measurements].sort((a, b) => a.size - b.size);
  const ok = sorted.filter((m) => m.ok);
  const growth = {} as Record<ReadBudget, Growth>;
  for (const budget of READ_BUDGETS)
    growth[budget] = classifyGrowth(ok.map((m) => ({ size: m.size, value: m.usage[budget] })));
  const errors: HandlerVerdict["errors"] = [];
  let exceeds: HandlerVerdict["exceeds"];
  for (const m of sorted) {
    if (m.ok) continue;
    const budget = m.code === "limit_exceeded" ? limitOfMessage(m.message) : undefined;
    if (budget && !exceeds) exceeds = { budget, size: m.size, message: m.message };
    else if (!budget) errors.push({ size: m.size, code: m.code, message: m.message });
  }
  // A limit crossed at some size also means the figure grows at least linearly from there.
  if (exceeds && exceeds.budget !== "rangeBytesRead" && growth[exceeds.budget] === "constant")
    growth[exceeds.budget] = "linear";
  const overall = READ_BUDGETS.map((b) => growth[b]).reduce((worst, g) =>
    ORDER.indexOf(g) > ORDER.indexOf(worst) ? g : worst,
  );
  const verdict: HandlerVerdict = { growth, overall, errors };
  if (exceeds) {
    verdict.exceeds = exceeds;
    verdict.advice = ADVICE[exceeds.budget];
    return verdict;
  }
  // Predictions only for figures growing at least linearly, and only within 1000x the sizes run:
  // beyond that a slowly growing figure's "limit" is noise.
  const horizon = (sorted.at(-1)?.size ?? 0) * PREDICTION_HORIZON;
  let soonest: HandlerVerdict["predicted"];
  for (const budget of READ_BUDGETS) {
    if (growth[budget] !== "linear" && growth[budget] !== "superlinear") continue;
    const at = extrapolate(
      ok.map((m) => ({ size: m.size, value: m.usage[budget] })),
      limitOf(budget),
    );
    if (at !== undefined && Number.isFinite(at) && at <= horizon && (!soonest || at < soonest.size))
      soonest = { budget, size: roughly(at) };
  }
  if (soonest) {
    verdict.predicted = soonest;
    verdict.advice = ADVICE[soonest.budget];
  }
  return verdict;
}
