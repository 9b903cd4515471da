import { randomBytes } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { HostDatabase, KvOperation, RecordStore } from "../db/index.js";

/**
 * The id of the stamp every write of a deployment record replaces, whichever deployment it is
 * (no deployment id is empty): one point read tells a host whether any record changed.
 */
const ANY = "";

/** A value no earlier stamp had: random, so two writers at once cannot leave one unchanged. */
function fresh(): string {
  return randomBytes(9).toString("base64url");
}

/**
 * The backstop of deployment announcements. Every batch that writes or deletes a deployment's
 * record also replaces that deployment's stamp and the stamp of {@link ANY}; a host checks
 * periodically (`LIMITS.deploymentRecordCheckMs`) whether that one moved, and if so which
 * deployments' did, and reads their records again as if their announcements had come: an
 * announcement lost (a deaf listener, a read after it that gave up) leaves a host's cache stale for
 * one period at most, not until it restarts. Stamps are random, not counted: an add by two writers
 * at once may lose one, and a count may come back to a value a host saw.
 */
export class RecordStamps {
  private readonly stamps: RecordStore<string>;
  /** Every stamp as last read, {@link ANY}'s with them, read together. */
  private seen: Map<string, string> | undefined;

  constructor(db: HostDatabase) {
    this.stamps = db.records<string>("deployment-stamps");
  }

  /** The writes that mark deployment `id`'s record changed, or `gone`, for the batch that changes it. */
  writes(id: string, gone = false): KvOperation[] {
    const key = this.stamps.key(id);
    return [
      gone ? { type: "del", key } : { type: "put", key, value: JSON.stringify(fresh()) },
      { type: "put", key: this.stamps.key(ANY), value: JSON.stringify(fresh()) },
    ];
  }

  /**
   * The deployments whose records changed since the last call: their stamps moved (or came, or
   * went); on the first call every stamped one, as any may have. One point read when none did;
   * else every stamp, read as of one moment with {@link ANY}'s, so no write between two reads is
   * missed.
   */
  async moved(): Promise<string[]> {
    const before = this.seen ?? new Map<string, string>();
    if (this.seen && before.get(ANY) === (await this.stamps.get(ANY))) return [];
    const now = await this.stamps.entriesAtOnce();
    this.seen = now;
    const moved = new Set<string>();
    for (const [id, stamp] of now) if (before.get(id) !== stamp) moved.add(id);
    for (const id of before.keys()) if (!now.has(id)) moved.add(id);
    moved.delete(ANY);
    return [...moved];
  }
}

/**
 * A host's periodic check of the stamps: at once (the first sees every stamp), then every
 * `LIMITS.deploymentRecordCheckMs`. One at a time; a check that fails (the database away) is
 * reported once until one succeeds, and the next tries again.
 */
export class StampChecks {
  private readonly timer: NodeJS.Timeout;
  /** The check under way, if any. */
  private checking: Promise<void> | undefined;
  private failing = false;
  private stopped = false;

  constructor(private readonly check: () => Promise<void>) {
    this.timer = setInterval(() => this.run(), LIMITS.deploymentRecordCheckMs).unref();
    this.run();
  }

  /** Runs a check once the one under way (if any) ended; resolves when it did (tests). */
  async runNow(): Promise<void> {
    await this.checking;
    this.run();
    await this.checking;
  }

  private run(): void {
    if (this.checking) return;
    this.checking = this.check()
      .then(
        () => {
          this.failing = false;
        },
        (error: unknown) => {
          if (!this.failing && !this.stopped)
            console.error("Checking deployment records' stamps failed; the next check tries again:", error);
          this.failing = true;
        },
      )
      .finally(() => {
        this.checking = undefined;
      });
  }

  /** Stops checking (a check under way ends on its own). */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
