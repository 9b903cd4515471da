import type { HostDatabase, LockFence, RecordStore } from "../db/index.js";
import type { SessionRecord } from "./sessions.js";

/** Marks an account as signed in once to one incarnation of a deployment. */
interface AccountMark {
  since: number;
}

/** The id of the mark of `email` in `deployment`'s incarnation `incarnation` (null: none). */
const markId = (deployment: string, incarnation: string | null, email: string): string =>
  `${deployment}/${incarnation ?? ""}/${email}`;

/** The record saying every account session written before this version has its mark. */
const MARKED_ALL = "accounts-marked";

/**
 * Which emails are accounts of which deployment: one mark per account and incarnation, written in
 * the batch of its first session, so asking costs one key instead of a scan of every session of
 * the deployment (an owner's "run as account" asks, as often as they like). Sessions of versions
 * before the marks are marked once by {@link markEarlierSessions}; until that has finished on this
 * database, a miss is checked against the sessions themselves.
 */
export class AccountIndex {
  private readonly marks: RecordStore<AccountMark>;
  private readonly done: RecordStore<{ at: number }>;
  private allMarked = false;

  constructor(db: HostDatabase) {
    this.marks = db.records<AccountMark>("account-marks");
    this.done = db.records<{ at: number }>("host-flags");
  }

  /** The mark of `record`'s account, to write in its session's batch; none for a guest. */
  markOf(record: SessionRecord): { id: string; value: AccountMark } | undefined {
    if (record.kind !== "account" || !record.email) return undefined;
    return {
      id: markId(record.deployment, record.incarnation ?? null, record.email),
      value: { since: record.createdAt },
    };
  }

  /** The storage key of a mark (sessions' batches write it beside the session). */
  key(id: string): Buffer {
    return this.marks.key(id);
  }

  /**
   * Whether the mark exists; undefined when it does not and sessions of earlier versions may still
   * lack theirs (the caller then looks at the sessions).
   */
  async has(deployment: string, email: string, incarnation: string | null): Promise<boolean | undefined> {
    if (await this.marks.has(markId(deployment, incarnation, email))) return true;
    if (!this.allMarked) this.allMarked = (await this.done.get(MARKED_ALL)) !== undefined;
    return this.allMarked ? false : undefined;
  }

  /**
   * Marks every account session stored so far, a page at a time, then records that it did: run
   * once per database (again after a crash midway; marks are idempotent). Sessions written
   * meanwhile mark themselves. Stops between pages once `stopping()` (a host closing), unrecorded.
   */
  async markEarlierSessions(sessions: RecordStore<SessionRecord>, stopping: () => boolean): Promise<void> {
    if ((await this.done.get(MARKED_ALL)) !== undefined) {
      this.allMarked = true;
      return;
    }
    for await (const page of sessions.entryPages()) {
      const marks = page.flatMap(([, record]) => {
        const mark = this.markOf(record);
        return mark ? [mark] : [];
      });
      if (marks.length > 0) await this.marks.batch(marks);
      if (stopping()) return;
    }
    await this.done.put(MARKED_ALL, { at: Date.now() });
    this.allMarked = true;
  }

  /** Whether every account has its mark (sessions of earlier versions marked: {@link markEarlierSessions}). */
  async complete(): Promise<boolean> {
    if (!this.allMarked) this.allMarked = (await this.done.get(MARKED_ALL)) !== undefined;
    return this.allMarked;
  }

  /** Removes every mark of deployment `id` (deleted); `fence`: its lifecycle lock's. */
  purge(id: string, fence?: LockFence): Promise<void> {
    return this.marks.deletePrefix(`${id}/`, fence);
  }
}
