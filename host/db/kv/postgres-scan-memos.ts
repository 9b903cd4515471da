import type pg from "pg";
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
 * program's, a row lock, a NOTIFY) does, and the next view is named anew. The server's start time
 * comes first: a restarted, restored or failed-over server may give out transaction ids again. A
 * standby's snapshot lists no transactions in progress (they are all in its subtransaction list),
 * so views there that see different rows may be named alike: a standby's views have no name
 * (NULL), and nothing is kept for them.
 */
export const SNAPSHOT_NAME: Statement = {
  text: "SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE extract(epoch FROM pg_postmaster_start_time())::text || '/' || pg_current_snapshot()::text END AS name",
  values: [],
};

/** Weight of a reader's outcome in its owner's score (see {@link PostgresScanMemos.scored}). */
const SCORE_WEIGHT = 0.1;
/** An owner whose score is at least this has its readers' snapshots begun before their handlers run. */
const BEGIN_EARLY_SCORE = 0.75;
/** Scores below this are forgotten (the owner starts from nothing again). */
const FORGET_SCORE = 0.01;
/**
 * Below this score, only one snapshot in {@link SAMPLE_EVERY} of the owner's readers names its view
 * and keeps what it read (the others read as if nothing were kept): where writes name new views
 * faster than reads repeat, that work pays for nothing, but a sample still tells when it would.
 */
const SAMPLE_BELOW_SCORE = 0.25;
const SAMPLE_EVERY = 8;

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

/** A view's name taken apart: which run of the server, its `xmax`, and how many transactions were in progress. */
interface NameOrder {
  server: string;
  xmax: bigint;
  inProgress: number;
}

function orderOf(name: string): NameOrder | undefined {
  const match = /^([\d.]+)\/(\d+):(\d+):([\d,]*)$/.exec(name);
  if (!match) return undefined;
  const inProgress = match[4] ? (match[4] as string).split(",").length : 0;
  return { server: match[1] as string, xmax: BigInt(match[3] as string), inProgress };
}

/** Whether `order` is a later view than `than`: a new run of the server, a later `xmax`, or fewer in progress. */
function isLater(order: NameOrder, than: NameOrder): boolean {
  if (order.server !== than.server) return true;
  return order.xmax > than.xmax || (order.xmax === than.xmax && order.inProgress < than.inProgress);
}

/**
 * The scans (and point reads) read through the latest PostgreSQL view this host has seen, kept by
 * the view's name ({@link SNAPSHOT_NAME}), so that a reader whose snapshot has the same name is
 * answered at once, inside its handler's first entry into its isolate, as the embedded store's
 * readers are (scan-memo.ts). Nothing here is stale: a kept scan answers only a view named alike,
 * which sees exactly the rows it was read from. The name changes with every write to the server,
 * so this pays where reads outnumber writes; a host with busy writers keeps little.
 *
 * A snapshot is begun with its first read (one round trip for both). Answering at once needs it
 * begun before the handler runs: a round trip of its own, which only pays when the handler's reads
 * are then kept ones. So each owner has a score of how often its readers were (or, begun late,
 * would have been) answered wholly from kept reads, and its readers begin early only while that
 * score is high ({@link beginEarly}).
 */
export class PostgresScanMemos {
  private latest: (NameOrder & { name: string; memo: ViewMemo }) | undefined;
  private readonly scores = new Map<string, number>();
  /** Snapshots made for owners read by sample (see {@link keepsFor}). */
  private sampled = 0;

  /**
   * Whether the server can name views (PostgreSQL 13 or later: `pg_current_snapshot`). A server
   * that cannot still serves every read, with nothing kept.
   */
  static async supported(pool: pg.Pool): Promise<boolean> {
    try {
      await pool.query(SNAPSHOT_NAME.text);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The memo of the view named `name`: the latest one's, a new one for a later view (the older one
   * is emptied: nobody is answered from it again), none for an earlier view or a name not
   * understood (nothing it reads is kept).
   */
  memoOf(name: string): ViewMemo | undefined {
    const latest = this.latest;
    if (latest?.name === name) return latest.memo;
    const order = orderOf(name);
    if (order === undefined || (latest !== undefined && !isLater(order, latest))) return undefined;
    this.forget();
    const memo = { scans: new ScanMemo(), points: new ScanMemo(LIMITS.pointMemoBytes, POINT_BOUNDS) };
    this.latest = { name, ...order, memo };
    return memo;
  }

  /**
   * Keeps nothing of the views seen so far: a connection to the server was lost, and a server that
   * crashed may have lost commits and give their transaction ids out again, under the same start time.
   */
  forget(): void {
    this.latest?.memo.scans.retire();
    this.latest?.memo.points.retire();
    this.latest = undefined;
  }

  /**
   * Whether `owner`'s next readers' snapshot should name its view and keep what they read: always
   * while their reads are often kept ones, else one snapshot in {@link SAMPLE_EVERY}.
   */
  keepsFor(owner: string): boolean {
    if ((this.scores.get(owner) ?? 0) >= SAMPLE_BELOW_SCORE) return true;
    this.sampled = (this.sampled + 1) % SAMPLE_EVERY;
    return this.sampled === 0;
  }

  /** Whether `owner`'s next reader should begin its snapshot before its handler runs. */
  beginEarly(owner: string): boolean {
    const memo = this.latest?.memo;
    const kept = memo !== undefined && (memo.scans.holdsAny(owner) || memo.points.holdsAny(owner));
    return kept && (this.scores.get(owner) ?? 0) >= BEGIN_EARLY_SCORE;
  }

  /** A reader of `owner` finished: `atOnce` when kept reads answered (or would have answered) all its reads. */
  scored(owner: string, atOnce: boolean): void {
    const score = (this.scores.get(owner) ?? 0) * (1 - SCORE_WEIGHT) + (atOnce ? SCORE_WEIGHT : 0);
    if (score < FORGET_SCORE) this.scores.delete(owner);
    else this.scores.set(owner, score);
  }
}
