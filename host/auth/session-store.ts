import type { HostDatabase, LockFence, RecordStore } from "../db/index.js";
import { AccountIndex } from "./account-index.js";
import { sweepEndedSessions } from "./session-sweep.js";
import { requireIssuedFor, requireLiveSession, type SessionProof, type SessionRecord } from "./sessions.js";
import type { TokenClaims } from "./tokens.js";

/** What a sign-in that upgrades a guest needs of the guest's session (see {@link SessionStore.upgradable}). */
export interface GuestToUpgrade {
  userId: string;
  session: string;
  /** The session's record, retired into account `accountUserId`, for the upgrade's transaction to write. */
  retire: (accountUserId: string) => { key: Buffer; value: string };
  /** True once the session was retired or signed out (by another sign-in, here or on another host). */
  isRetired: () => Promise<boolean>;
}

/** The id of a session's record: `<deployment>/<session>`. */
const recordId = (deployment: string, session: string): string => `${deployment}/${session}`;

/** True when a session can no longer be upgraded or used: gone, retired or signed out. */
const ended = (record: SessionRecord | undefined): boolean =>
  !record || record.retiredAt !== undefined || record.signedOutAt !== undefined;

/**
 * App users' session records of one host, each `<deployment>/<session>`: what AuthService reads
 * and writes of them, kept apart from tokens and open connections.
 */
export class SessionStore {
  private readonly records: RecordStore<SessionRecord>;
  private readonly accounts: AccountIndex;

  constructor(db: HostDatabase) {
    this.records = db.records<SessionRecord>("sessions");
    this.accounts = new AccountIndex(db);
  }

  /** The storage key of session `session` of `deployment` (commits name keys so). */
  key(deployment: string, session: string): Buffer {
    return this.records.key(recordId(deployment, session));
  }

  /** The record whose id is `<deployment>/<session>` (a gate's session id), or undefined. */
  byId(sessionId: string): Promise<SessionRecord | undefined> {
    return this.records.get(sessionId);
  }

  /** Writes a new session's record, with its account's mark (see {@link AccountIndex}). */
  add(record: SessionRecord): Promise<void> {
    const mark = this.accounts.markOf(record);
    return this.records.batch(
      [{ id: recordId(record.deployment, record.session), value: record }],
      mark ? [{ key: this.accounts.key(mark.id), value: JSON.stringify(mark.value) }] : [],
    );
  }

  /**
   * The record of the session `claims` name if it may still be used and the token was issued for
   * it (see {@link requireIssuedFor}); throws `unauthorized` otherwise.
   */
  async live(claims: TokenClaims): Promise<SessionRecord> {
    const record = requireLiveSession(await this.records.get(recordId(claims.deployment, claims.session)));
    return requireIssuedFor(record, claims);
  }

  /** What a mutation checks again in its transaction: the session is still live (see {@link SessionProof}). */
  proof(deployment: string, session: string): SessionProof {
    return {
      key: this.key(deployment, session),
      check: (stored) => {
        requireLiveSession(stored === null ? undefined : (JSON.parse(stored) as SessionRecord));
      },
    };
  }

  /**
   * Whether `email` (normalised) signed in to `deployment`'s incarnation `incarnation` at least
   * once: a session a sign-in racing the deletion of an earlier deployment of this id left behind is
   * not of this one. One key, or (before sessions of earlier versions are all marked) the
   * deployment's sessions until the first match.
   */
  async hasAccount(deployment: string, email: string, incarnation: string | null): Promise<boolean> {
    const marked = await this.accounts.has(deployment, email, incarnation);
    if (marked !== undefined) return marked;
    return this.records.someInPrefix(
      `${deployment}/`,
      (session) =>
        session.kind === "account" &&
        session.email === email &&
        (session.incarnation ?? null) === incarnation,
    );
  }

  /** Marks the accounts of sessions stored before marks were kept (see {@link AccountIndex.markEarlierSessions}). */
  markEarlierAccounts(stopping: () => boolean): Promise<void> {
    return this.accounts.markEarlierSessions(this.records, stopping);
  }

  /** Deletes the records of sessions no token can use any more (see {@link sweepEndedSessions}). */
  async sweepEnded(now?: number): Promise<number> {
    return sweepEndedSessions(this.records, await this.accounts.complete(), now);
  }

  /** Removes every session of deployment `id`, and its accounts' marks. */
  async purge(id: string, fence?: LockFence): Promise<void> {
    await this.records.deletePrefix(`${id}/`, fence);
    await this.accounts.purge(id, fence);
  }

  /**
   * The guest session a guest token's `claims` name, for a sign-in to upgrade; null when it ended.
   * Throws `unauthorized` when the token was not issued for it (see {@link requireIssuedFor}).
   */
  async upgradable(claims: TokenClaims): Promise<GuestToUpgrade | null> {
    const id = recordId(claims.deployment, claims.session);
    const record = await this.records.get(id);
    if (record) requireIssuedFor(record, claims);
    if (!record || ended(record)) return null;
    return {
      userId: record.userId,
      session: record.session,
      retire: (accountUserId) => ({
        key: this.records.key(id),
        value: JSON.stringify(
          Object.assign({}, record, { retiredAt: Date.now(), upgradedTo: accountUserId }),
        ),
      }),
      isRetired: async () => ended(await this.records.get(id)),
    };
  }
}

/** A stored session record marked signed out now, or null to leave it (gone, or signed out already). */
export function signedOutRecord(stored: string | null): string | null {
  const record = stored === null ? undefined : (JSON.parse(stored) as SessionRecord);
  if (!record || record.signedOutAt !== undefined) return null;
  return JSON.stringify(Object.assign({}, record, { signedOutAt: Date.now() }));
}
