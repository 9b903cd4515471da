import { LIMITS } from "../../sdk/protocol/index.js";
import { type HostDatabase, NamedLocks, type RecordStore } from "../db/index.js";

const WINDOW_MS = LIMITS.emailCodeWindowSeconds * 1000;

/**
 * Sign-in mails one client network may have sent to one mailbox (`mailboxKey`: an address's
 * `+tag` variants are one) in a window, every deployment of the installation together
 * (`LIMITS.emailCodeMailsPerAddress`): each deployment's own limit
 * alone let one client have every deployment of a host mail a victim (5 mails per deployment per
 * window). Per client network, so that someone else's requests never leave the address's owner
 * without a code. Stored, so every host counts the same mails; read and written under a lock of
 * this process only (taken inside a deployment's code lock, a second lock across hosts would hold
 * a second database connection, and a burst over 13 deployments took them all): hosts racing on
 * one address may let a mail or two more through.
 */
export class MailBudget {
  private readonly records: RecordStore<{ sentAt: number[] }>;
  private readonly locks = new NamedLocks();

  constructor(db: HostDatabase) {
    this.records = db.records<{ sentAt: number[] }>("email-mails");
  }

  /** Takes one mail to `mailbox` asked for from `client` (its network's key) at `now`: 0, or the ms until one is free. */
  take(mailbox: string, client: string, now = Date.now()): Promise<number> {
    const id = `${mailbox}\u0000${client}`;
    return this.locks.run(id, async () => {
      const sentAt = ((await this.records.get(id))?.sentAt ?? []).filter((at) => at > now - WINDOW_MS);
      if (sentAt.length >= LIMITS.emailCodeMailsPerAddress) return (sentAt[0] as number) + WINDOW_MS - now;
      sentAt.push(now);
      await this.records.put(id, { sentAt });
      return 0;
    });
  }

  /** Deletes the records whose mails all left the window; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    const gone = (record: { sentAt: number[] } | undefined) =>
      record?.sentAt.every((at) => at <= now - WINDOW_MS) === true;
    let deleted = 0;
    for await (const page of this.records.entryPages())
      for (const [id, record] of page) {
        if (!gone(record)) continue;
        deleted += await this.locks.run(id, async () => {
          if (!gone(await this.records.get(id))) return 0;
          await this.records.delete(id);
          return 1;
        });
      }
    return deleted;
  }
}
