import { randomBytes } from "node:crypto";
import pg from "pg";
import { LIMITS } from "../../../sdk/protocol/index.js";
import { type HostBus, type IfFree, type LockOptions, RESYNC_MESSAGE } from "./kv.js";
import type { FencedWork, LockFence } from "./lock-fence.js";
import { KEEP_ALIVE, serverKeepaliveSql } from "./postgres-keepalive.js";
import { PostgresLocks } from "./postgres-locks.js";
import type { Track } from "./postgres-parking.js";
import { CHANNEL } from "./postgres-sql.js";

/** A connection listening on the broadcast channel. */
async function listen(url: string): Promise<pg.Client> {
  const listener = new pg.Client(Object.assign({ connectionString: url }, KEEP_ALIVE));
  listener.on("error", () => {});
  try {
    await listener.connect();
    // A server (or a proxy) refusing the statement leaves the connection as it was.
    await listener.query(serverKeepaliveSql()).catch(() => {});
    await listener.query(`LISTEN ${CHANNEL}`);
  } catch (error) {
    await listener.end().catch(() => {});
    throw error;
  }
  return listener;
}

/**
 * The hosts sharing one PostgreSQL store. Locks are transaction-scoped advisory locks
 * (`pg_advisory_xact_lock`) held in an open transaction on a connection of a lock pool: nothing is
 * written for them (no row per lock name to grow forever, no commit to flush), released by commit,
 * or by the server when the holding process dies and its connection closes. Outer locks (see
 * {@link LockOptions}) take their connection from a pool of their own: a burst of deploys, each
 * holding its outer lock while it waits for inner ones, can then never hold every lock connection.
 * Taking a lock is one round trip; releasing it does not hold up the caller (the server makes the
 * next holder wait until it is released). Broadcasts are LISTEN/NOTIFY on one channel, tagged with
 * this process's origin so it ignores its own; a commit sends its own with its write
 * ({@link PostgresBus.tagged}). A listener lost (a server restart) is replaced, and handlers are
 * then told that anything may have changed.
 */
export class PostgresBus implements HostBus {
  private readonly handlers = new Set<(message: string) => void>();
  private readonly origin = randomBytes(8).toString("hex");
  private closed = false;
  /** Attempts to listen again since the listener was lost (for the wait before the next). */
  private retries = 0;
  /** The locks this process holds, and the turns they are taken in. */
  private readonly held: PostgresLocks;
  /** False while the listener is lost and not replaced yet. */
  private listening = true;
  /**
   * This process's last check broadcast (see {@link checkListener}): sent (when, ms), heard, or
   * still on its way out.
   */
  private lastCheck = { sent: false, sentAt: 0, heard: true, sending: false };
  private readonly checks: NodeJS.Timeout;

  private constructor(
    private readonly url: string,
    locks: pg.Pool,
    outerLocks: pg.Pool,
    private readonly notify: pg.Pool,
    private listener: pg.Client,
    table: string,
    track: Track,
    private readonly checkMs: number,
  ) {
    this.watch(listener);
    this.checks = setInterval(() => this.checkListener(), checkMs).unref();
    this.held = new PostgresLocks(locks, outerLocks, table, track);
  }

  /** Listens on the channel; locks use `locks` (outer ones `outerLocks`), broadcasts go out through `notify`. */
  static async open(
    url: string,
    pools: { locks: pg.Pool; outerLocks: pg.Pool; notify: pg.Pool },
    table: string,
    track: Track,
    checkMs: number = LIMITS.databaseListenerCheckMs,
  ): Promise<PostgresBus> {
    const listener = await listen(url);
    return new PostgresBus(url, pools.locks, pools.outerLocks, pools.notify, listener, table, track, checkMs);
  }

  /** The payload of a check broadcast: this process's origin, then what no message is (they are JSON). */
  private get check(): string {
    return `${this.origin}|check`;
  }

  /**
   * Sends this process a broadcast; when the one sent at the last check was not heard, the
   * listener is deaf (its connection dropped without a word, which TCP alone notices only after
   * many minutes): it is ended, and the host listens again and re-reads (see {@link relisten}).
   */
  private checkListener(): void {
    const last = this.lastCheck;
    // A check still on its way out (the server busy) tells nothing yet.
    if (this.closed || !this.listening || last.sending) return;
    if (last.sent && !last.heard) {
      // Sent just now, its notification may not be handled yet: judged a whole period after.
      if (performance.now() - last.sentAt < this.checkMs) return;
      this.lastCheck = { sent: false, sentAt: 0, heard: true, sending: false };
      const deaf = this.listener;
      deaf.end().catch(() => {});
      // A connection that hears nothing may never finish ending: its socket goes at once.
      (deaf as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      return;
    }
    const check = { sent: false, sentAt: 0, heard: false, sending: true };
    this.lastCheck = check;
    this.notify.query("SELECT pg_notify($1, $2)", [CHANNEL, this.check]).then(
      () => {
        check.sent = true;
        check.sentAt = performance.now();
        check.sending = false;
      },
      // Not sent (the server away): nothing to tell about the listener.
      () => {
        check.sending = false;
      },
    );
  }

  /** Passes `listener`'s notifications on, and listens again once it is lost. */
  private watch(listener: pg.Client): void {
    listener.on("notification", (notification) => {
      const payload = notification.payload ?? "";
      if (payload === this.check) {
        this.lastCheck.heard = true;
        return;
      }
      const split = payload.indexOf("|");
      if (split < 0 || payload.slice(0, split) === this.origin) return;
      const message = payload.slice(split + 1);
      // Said by the bus itself, never by a host: from the wire (anyone who may connect), it made
      // every host read every schema again and re-run every subscription.
      if (saysResync(message)) return;
      this.deliver(message);
    });
    let lost = false;
    const onLost = () => {
      if (lost || this.closed || this.listener !== listener) return;
      lost = true;
      this.listening = false;
      void this.relisten();
    };
    listener.on("error", onLost);
    listener.on("end", onLost);
  }

  private deliver(message: string): void {
    for (const handler of [...this.handlers]) handler(message);
  }

  /**
   * Listens again (the server restarted, or ended the connection), waiting longer after each
   * failure; then tells the handlers that anything may have changed meanwhile
   * ({@link RESYNC_MESSAGE}): broadcasts sent while nobody listened are gone.
   */
  private async relisten(): Promise<void> {
    while (!this.closed) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 50 * 2 ** this.retries)).unref());
      this.retries++;
      try {
        const listener = await listen(this.url);
        if (this.closed) {
          await listener.end().catch(() => {});
          return;
        }
        this.listener = listener;
        this.retries = 0;
        this.listening = true;
        this.lastCheck = { sent: false, sentAt: 0, heard: true, sending: false };
        this.watch(listener);
        this.deliver(RESYNC_MESSAGE);
        return;
      } catch {
        // The server is not back yet: try again.
      }
    }
  }

  inOwnerTurn<T>(owner: string, work: () => Promise<T>): Promise<T> {
    return this.held.inOwnerTurn(owner, work);
  }

  lockAcrossProcesses<T>(
    name: string,
    work: (read?: Array<string | undefined>, fence?: LockFence) => Promise<T>,
    options?: LockOptions,
  ): Promise<T> {
    return this.held.lock(name, work, options);
  }

  lockAcrossProcessesIfFree<T>(name: string, work: FencedWork<T>, options?: LockOptions): Promise<IfFree<T>> {
    return this.held.lockIfFree(name, work, options);
  }

  /** `message` as this process broadcasts it (for a commit that sends it itself, with its write). */
  tagged(message: string): string {
    return `${this.origin}|${message}`;
  }

  async broadcast(message: string): Promise<void> {
    await this.notify.query("SELECT pg_notify($1, $2)", [CHANNEL, this.tagged(message)]);
  }

  onBroadcast(handler: (message: string) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** Stops listening (the pools are the store's to end). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.checks);
    await this.listener.end().catch(() => {});
  }
}

/** Whether broadcast `text` is a resync ({@link RESYNC_MESSAGE}), which only the bus may say. */
function saysResync(text: string): boolean {
  try {
    return (JSON.parse(text) as { type?: unknown } | null)?.type === "resync";
  } catch {
    return false;
  }
}
