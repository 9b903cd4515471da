import { LIMITS } from "../../../sdk/protocol/index.js";
import type { KvIterateOptions } from "./kv.js";
import type { Statement } from "./postgres-sql.js";
import { type MemoBounds, ScanMemo } from "./scan-memo.js";

/**
 * The statement that names a read snapshot's view. PostgreSQL's snapshot (`xmin:xmax:xip`) says
 * which transactions a view sees: every one below `xmax` not in progress (`xip`), and none from
 * `xmax` on. What a transaction below `xmax` did is settled once it is out of `xip`, so two views
 * named alike see the same rows, however far apart in time, on whichever host. A read-only
 * transaction takes no transaction id; any write anywhere on the server (another host's, another
 * program's, a row lock, a NOTIFY) does, and the next view is named anew.
 */
export const SNAPSHOT_NAME: Statement = { text: "SELECT pg_current_snapshot()::text AS name", values: [] };

/** Weight of a reader's outcome in its owner's score (see {@link PostgresScanMemos.scored}). */
const SCORE_WEIGHT = 0.1;
/** An owner whose score is at least this has its readers' snapshots begun before their handlers run. */
const BEGIN_EARLY_SCORE = 0.6;
/** Scores below this are forgotten (the owner starts from nothing again). */
const FORGET_SCORE = 0.01;

/**
 * What readers of one view keep: their scans, and apart from them their point reads (each kept as
 * the scan of {@link pointRange}), so that many point reads never take the room of a few scans.
 */
export interface ViewMemo {
  readonly scans: ScanMemo;
  readonly points: ScanMemo;
}

/** The range holding `key` alone (no key sorts between `key` and `key` followed by a zero byte). */
export function pointRange(key: Buffer): KvIterateOptions {
  return { gte: key, lt: Buffer.concat([key, ZERO]) };
}
const ZERO = Buffer.from([0]);

const POINT_BOUNDS: MemoBounds = {
  ownerScans: LIMITS.pointMemoKeys,
  totalScans: LIMITS.pointMemoTotalKeys,
  totalBytes: LIMITS.pointMemoTotalBytes,
};

/** How a view's name orders against others: later `xmax` first, then fewer transactions in progress. */
function orderOf(name: string): { xmax: bigint; inProgress: number } | undefined {
  const match = /^(\d+):(\d+):([\d,]*)$/.exec(name);
  if (!match) return undefined;
  return {
    xmax: BigInt(match[2] as string),
    inProgress: match[3] ? (match[3] as string).split(",").length : 0,
  };
}

/**
 * The scans (and point reads) read through the latest PostgreSQL view this host has seen, kept by the view's name
 * ({@link SNAPSHOT_NAME}), so that a reader whose snapshot has the same name is answered at once,
 * inside its handler's first entry into its isolate, as the embedded store's readers are
 * (scan-memo.ts). Nothing here is ever stale: a kept scan answers only a view named alike, which
 * sees exactly the rows it was read from. The name changes with every write to the server, so
 * this pays where reads outnumber writes; a host with busy writers keeps little.
 *
 * A snapshot is begun with its first read (one round trip for both). Answering at once needs it
 * begun before the handler runs: a round trip of its own, which only pays when the handler's reads
 * are then kept ones. So each owner has a score of how often its readers were (or, begun late,
 * would have been) answered wholly from kept scans, and its readers begin early only while that
 * score is high ({@link beginEarly}).
 */
export class PostgresScanMemos {
  private latest: { name: string; xmax: bigint; inProgress: number; memo: ViewMemo } | undefined;
  private readonly scores = new Map<string, number>();

  /**
   * The memo of the view named `name`: the latest one's, a new one for a later view (the older one
   * is dropped), none for an earlier view or a name not understood (nothing it reads is kept).
   */
  memoOf(name: string): ViewMemo | undefined {
    const latest = this.latest;
    if (latest?.name === name) return latest.memo;
    const order = orderOf(name);
    if (order === undefined) return undefined;
    const later =
      latest === undefined ||
      order.xmax > latest.xmax ||
      (order.xmax === latest.xmax && order.inProgress < latest.inProgress);
    if (!later) return undefined;
    this.latest = {
      name,
      ...order,
      memo: { scans: new ScanMemo(), points: new ScanMemo(LIMITS.pointMemoBytes, POINT_BOUNDS) },
    };
    return this.latest.memo;
  }

  /** Whether `owner`'s next reader should begin its snapshot before its handler runs. */
  beginEarly(owner: string): boolean {
    const memo = this.latest?.memo;
    const kept = memo !== undefined && (memo.scans.holdsAny(owner) || memo.points.holdsAny(owner));
    return kept && (this.scores.get(owner) ?? 0) >= BEGIN_EARLY_SCORE;
  }

  /** A reader of `owner` finished: `atOnce` when kept scans answered (or would have answered) all its reads. */
  scored(owner: string, atOnce: boolean): void {
    const score = (this.scores.get(owner) ?? 0) * (1 - SCORE_WEIGHT) + (atOnce ? SCORE_WEIGHT : 0);
    if (score < FORGET_SCORE) this.scores.delete(owner);
    else this.scores.set(owner, score);
  }
}
