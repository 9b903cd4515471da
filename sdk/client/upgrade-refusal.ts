import { SYNC_CLOSE } from "../protocol/sync-close.js";

/**
 * Why one sync socket ended, as far as the client can tell. `ws` (Node) names a refused upgrade's
 * status in its error (`Unexpected server response: 401`); a browser says only that the socket
 * closed, the same for a token the host no longer knows (a restarted `platform dev`, a new data
 * folder) as for a host that is down. Such an unexplained failure is `unexplained`: the connection
 * then checks its token over HTTP, where a refusal shows (renewed, or replaced by a new guest),
 * once until a socket opens again, so a host that refuses for another reason (too many sockets,
 * draining) only sees the usual backoff.
 */
export class UpgradeRefusal {
  private wasOpen = false;
  private told = false;
  /** The host refused the socket's token, or ended its identity while it was open (close 4001). */
  refused = false;

  /** The socket opened: whatever ends it later is not a refused upgrade. */
  opened(): void {
    this.wasOpen = true;
  }

  /** The socket's error event: `ws` names a refused upgrade's status in its message. */
  error(event: unknown): void {
    const message = String((event as { message?: unknown } | undefined)?.message ?? "");
    if (message !== "") this.told = true;
    if (/\b401\b/.test(message)) this.refused = true;
  }

  /** The socket closed with `code`: 4001 is the host ending its identity. */
  closed(code: number | undefined): void {
    if (code === SYNC_CLOSE.identityEnded) this.refused = true;
  }

  /** It never opened, and nothing said why (a browser's socket). */
  get unexplained(): boolean {
    return !this.wasOpen && !this.told && !this.refused;
  }
}
