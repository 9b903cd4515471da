import type { RecordStore } from "../db/index.js";
import type { SessionRecord } from "./sessions.js";
import { RENEWAL_WINDOW_SECONDS, TOKEN_LIFETIME_SECONDS } from "./tokens.js";

/** Hosts' clocks may disagree: a session is swept this long after it ended on this host's clock. */
const CLOCK_MARGIN_SECONDS = 24 * 60 * 60;

/** How long after it started no token of a session can be valid: the last renewal's lifetime. */
export const SESSION_USABLE_SECONDS = RENEWAL_WINDOW_SECONDS + TOKEN_LIFETIME_SECONDS;

/**
 * Deletes the records of guest sessions that ended: started longer ago than any token of theirs can
 * be valid (renewed or not, a pending upgrade included), so nothing can use them again. Without it
 * every guest ever made is kept for good. Account sessions stay: an account exists because it
 * signed in (`AuthService.accountExists`). Reads a page at a time; returns how many it deleted.
 */
export async function sweepEndedGuestSessions(
  sessions: RecordStore<SessionRecord>,
  now = Date.now(),
): Promise<number> {
  const startedBefore = now - (SESSION_USABLE_SECONDS + CLOCK_MARGIN_SECONDS) * 1000;
  let deleted = 0;
  for await (const page of sessions.entryPages()) {
    const ended = page.filter(([, record]) => record.kind === "guest" && record.createdAt < startedBefore);
    if (ended.length === 0) continue;
    await sessions.batch(ended.map(([id]) => ({ id, value: null })));
    deleted += ended.length;
  }
  return deleted;
}
