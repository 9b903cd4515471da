import { randomBytes } from "node:crypto";
import pg from "pg";
import type { HostBus, LockOptions } from "./kv.js";

const CHANNEL = "platform";

/**
 * The hosts sharing one PostgreSQL store. Locks are row locks (`SELECT ... FOR UPDATE` on the lock's
 * row) held in an open transaction on a connection of a lock pool: plain SQL, released by commit,
 * or by the server when the holding process dies and its connection closes. Outer locks (see
 * {@link LockOptions}) take their connection from a pool of their own: a burst of deploys, each
 * holding its outer lock while it waits for inner ones, can then never hold every lock connection. Broadcasts are
 * LISTEN/NOTIFY on one channel (the one PostgreSQL-specific feature used), tagged with this
 * process's origin so it ignores its own.
 */
export class PostgresBus implements HostBus {
  private readonly handlers = new Set<(message: string) => void>();
  private readonly origin = randomBytes(8).toString("hex");

  private constructor(
    private readonly locks: pg.Pool,
    private readonly outerLocks: pg.Pool,
    private readonly notify: pg.Pool,
    private readonly listener: pg.Client,
    private readonly table: string,
  ) {
    listener.on("notification", (notification) => {
      const payload = notification.payload ?? "";
      const split = payload.indexOf("|");
      if (split < 0 || payload.slice(0, split) === this.origin) return;
      const message = payload.slice(split + 1);
      for (const handler of [...this.handlers]) handler(message);
    });
  }

  /** Listens on the channel; locks use `locks` (outer ones `outerLocks`), broadcasts go out through `notify`. */
  static async open(
    url: string,
    pools: { locks: pg.Pool; outerLocks: pg.Pool; notify: pg.Pool },
    table: string,
  ): Promise<PostgresBus> {
    const listener = new pg.Client({ connectionString: url });
    listener.on("error", () => {});
    await listener.connect();
    await listener.query(`LISTEN ${CHANNEL}`);
    return new PostgresBus(pools.locks, pools.outerLocks, pools.notify, listener, table);
  }

  async lockAcrossProcesses<T>(name: string, work: () => Promise<T>, options?: LockOptions): Promise<T> {
    const client = await (options?.outer ? this.outerLocks : this.locks).connect();
    let broken = false;
    try {
      await client.query(`INSERT INTO ${this.table}_locks (name) VALUES ($1) ON CONFLICT DO NOTHING`, [name]);
      await client.query("BEGIN");
      await client.query(`SELECT name FROM ${this.table}_locks WHERE name = $1 FOR UPDATE`, [name]);
      return await work();
    } finally {
      await client.query("COMMIT").catch(() => {
        broken = true;
      });
      client.release(broken);
    }
  }

  async broadcast(message: string): Promise<void> {
    await this.notify.query("SELECT pg_notify($1, $2)", [CHANNEL, `${this.origin}|${message}`]);
  }

  onBroadcast(handler: (message: string) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** Stops listening (the pools are the store's to end). */
  async close(): Promise<void> {
    await this.listener.end().catch(() => {});
  }
}
