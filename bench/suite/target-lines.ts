/**
 * bench/suite's figures as target lines (bench/lib/targets.ts), for `npm run bench`'s summary: the
 * platform against Koa + classic-level (b) and Koa + better-sqlite3 (c), and on PostgreSQL (a')
 * against itself on classic-level (a).
 */
import type { LoadResult } from "../lib/run-load.js";
import { percent, targetLine } from "../lib/targets.js";
import { PG_INSERTS_PER_SECOND, pgRatioTarget } from "./pg-targets.js";

/** One operation's median runs by server name. */
export interface OperationResult {
  op: string;
  read: boolean;
  /** Each connection started at a body of its own (bench/lib/load.ts); left out of the means. */
  spread?: boolean;
  by: Record<string, LoadResult>;
}

/** The results the means are taken over: every operation sent in one order by every connection. */
export const inMeans = (results: OperationResult[]): OperationResult[] => results.filter((r) => !r.spread);

/** Server names as bench/suite/run.ts gives them. */
export const SERVERS = {
  platform: "platform",
  postgres: "platform on PostgreSQL",
  level: "koa+classic-level",
  sqlite: "koa+better-sqlite3",
} as const;

/** The insert with each connection starting at a list of its own: a group's members in distinct lists. */
export const SPREAD_INSERT = "insert, each connection from its own list";

const rps = (result: OperationResult | undefined, server: string) => result?.by[server]?.rps;

/** The geometric mean over `results` of server `a`'s rate against server `b`'s. */
export function meanRatio(results: OperationResult[], a: string, b: string): number {
  const logs = results.map((r) => Math.log((r.by[a] as LoadResult).rps / (r.by[b] as LoadResult).rps));
  return Math.exp(logs.reduce((sum, value) => sum + value, 0) / logs.length);
}

/** Every target of the suite, one line each. */
export function suiteTargetLines(results: OperationResult[]): string[] {
  const { platform, postgres, level, sqlite } = SERVERS;
  const of = (op: string) => results.find((r) => r.op === op);
  const ratio = (op: string, a: string, b: string) => {
    const [x, y] = [rps(of(op), a), rps(of(op), b)];
    return x === undefined || y === undefined ? undefined : x / y;
  };
  const lines: string[] = [];
  const all = meanRatio(inMeans(results), platform, level);
  const readsC = meanRatio(
    inMeans(results).filter((r) => r.read),
    platform,
    sqlite,
  );
  lines.push(targetLine("platform / koa+classic-level, geometric mean", percent(all), ">= 70%", all >= 0.7));
  lines.push(
    targetLine("platform / koa+better-sqlite3 on reads", `${readsC.toFixed(2)}x`, ">= 0.67x", readsC >= 0.67),
  );
  const list = ratio("list 50 by index", platform, level);
  if (list !== undefined)
    lines.push(
      targetLine("list 50, platform / koa+classic-level", `${list.toFixed(2)}x`, ">= 1.0x", list >= 1),
    );
  const page = ratio("paginate (page of 20)", platform, sqlite);
  if (page !== undefined)
    lines.push(
      targetLine("paginate, platform / koa+better-sqlite3", `${page.toFixed(2)}x`, ">= 0.8x", page >= 0.8),
    );
  for (const result of results) {
    const target = pgRatioTarget(result.op);
    const pg = ratio(result.op, postgres, platform);
    if (target === undefined || pg === undefined) continue;
    lines.push(
      targetLine(
        `${result.op}, PostgreSQL / classic-level`,
        percent(pg),
        `>= ${percent(target)}`,
        pg >= target,
      ),
    );
  }
  const inserts = rps(of("insert"), postgres);
  if (inserts !== undefined)
    lines.push(
      targetLine(
        "inserts/s of one deployment on PostgreSQL",
        Math.round(inserts).toLocaleString("en-US"),
        `>= ${PG_INSERTS_PER_SECOND.toLocaleString("en-US")}`,
        inserts >= PG_INSERTS_PER_SECOND,
      ),
    );
  const spread = rps(of(SPREAD_INSERT), postgres);
  if (spread !== undefined)
    lines.push(
      targetLine(
        "inserts/s of one deployment on PostgreSQL, each connection from its own list",
        Math.round(spread).toLocaleString("en-US"),
        "none",
      ),
    );
  return lines;
}
