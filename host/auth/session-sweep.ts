import type { RecordStore } from "../db/index.js";
import type { SessionRecord } from "./sessions.js";
import { HOSTS_CLOCK_MARGIN_SECONDS, RENEWAL_WINDOW_SECONDS, TOKEN_LIFETIME_SECONDS } from "./tokens.js";

/** Hosts' clocks may disagree: a session is swept this long after it ended on this host's clock. */
const CLOCK_MARGIN_SECONDS = HOSTS_CLOCK_MARGIN_SECONDS;

/** How long after it started no token of a session can be valid: the last renewal's lifetime. */
export const SESSION_USABLE_SECONDS = RENEWAL_WINDOW_SECONDS + TOKEN_LIFETIME_SECONDS;

/**
 * Deletes the records of sessions that ended: started longer ago than any token of theirs can be
 * valid (renewed or not, a pending upgrade included), or signed out a day ago (the hosts' clock
 * margin), so nothing can use them again. Without it every session ever made is kept. Account
 * sessions only once `accountsMarked` (every account has its mark, which says it exists:
 * `AuthService.accountExists`); until then they are what says so. Reads a page at a time;
 * returns how many it deleted.
 */
export async function sweepEndedSessions(
  sessions: RecordStore<SessionRecord>,
  accountsMarked: boolean,
  now = Date.now(),
): Promise<number> {
  const startedBefore = now - (SESSION_USABLE_SECONDS + CLOCK_MARGIN_SECONDS) * 1000;
  const signedOutBefore = now - CLOCK_MARGIN_SECONDS * 1000;
  const ended = (record: SessionRecord) =>
    (record.kind === "guest" || accountsMarked) &&
    (record.createdAt < startedBefore || (record.signedOutAt ?? now) < signedOutBefore);
  let deleted = 0;
  for await (const page of sessions.entryPages()) {
    const gone = page.filter(([, record]) => ended(record));
    if (gone.length === 0) continue;
    await sessions.batch(gone.map(([id]) => ({ id, value: null })));
    deleted += gone.length;
  }
  return deleted;
}
