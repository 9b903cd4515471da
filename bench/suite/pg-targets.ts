/**
 * The PostgreSQL column's targets (the performance issue, item 1): the platform on PostgreSQL
 * against the same platform on classic-level (a'/a) in the same run, and inserts per second of
 * one deployment on loopback.
 */
const RATIO_TARGETS: Record<string, number> = {
  "get by id": 0.5,
  "list 50 by index": 0.7,
  "paginate (page of 20)": 0.7,
  "count a list (500)": 0.7,
  insert: 0.4,
};

/** Inserts per second one deployment on PostgreSQL should take. */
export const PG_INSERTS_PER_SECOND = 2000;

/** The least a'/a an operation should reach; undefined when it has no target. */
export function pgRatioTarget(op: string): number | undefined {
  return RATIO_TARGETS[op];
}

/** The target cell of an operation's row: "target >= x%: met" (or "not met"); "-" without one. */
export function pgTargetCell(op: string, ratio: number | undefined): string {
  const target = RATIO_TARGETS[op];
  if (target === undefined || ratio === undefined) return "-";
  return `>= ${Math.round(target * 100)}%: ${ratio >= target ? "met" : "not met"}`;
}

/** The line on one deployment's insert rate on PostgreSQL. */
export function pgInsertLine(insertsPerSecond: number | undefined): string {
  if (insertsPerSecond === undefined) return "PostgreSQL column skipped: no insert rate to compare.";
  const rate = Math.round(insertsPerSecond).toLocaleString("en-US");
  const met = insertsPerSecond >= PG_INSERTS_PER_SECOND ? "met" : "not met";
  return `one deployment on PostgreSQL: ${rate} inserts/s (target >= ${PG_INSERTS_PER_SECOND.toLocaleString("en-US")}/s: ${met})`;
}
