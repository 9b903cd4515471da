import { randomBytes } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import { type HostDatabase, NamedLocks, type RecordStore } from "../db/index.js";

const WINDOW_MS = LIMITS.emailCodeWindowSeconds * 1000;

type MailTimes = { sentAt: number[] };

/**
 * Sign-in mails one client network may have sent to one mailbox (`mailboxKey`: an address's
 * `+tag` variants are one) in a window, every deployment of the installation together
 * (`LIMITS.emailCodeMailsPerAddress`): each deployment's own limit alone let one client have
 * every deployment of a host mail a victim (5 mails per deployment per window). Per client
 * network, so that someone else's requests never leave the address's owner without a code.
 *
 * Stored, so every host counts the same mails: each process writes a record of its own, under a
 * lock of this process only, and a take adds up every process's. Taken inside a deployment's code
 * lock, a lock across hosts would hold a second database connection (a burst over 13 deployments
 * took them all); and one record for all, written back by hosts that read it at once, lost the
 * others' mails (two hosts asked together sent twice the mails). Hosts racing on one mailbox may
 * each let one mail more through.
 */
export class MailBudget {
  private readonly records: RecordStore<MailTimes>;
  private readonly locks = new NamedLocks();
  /** This process's records' id suffix. */
  private readonly writer = randomBytes(6).toString("hex");

  constructor(db: HostDatabase) {
    this.records = db.records<MailTimes>("email-mails");
  }

  /** Takes one mail to `mailbox` asked for from `client` (its network's key) at `now`: 0, or the ms until one is free. */
  take(mailbox: string, client: string, now = Date.now()): Promise<number> {
    // A prefix ends where its mailbox and client do: neither has a space once the client is
    // escaped (listPrefix takes no NUL). The one record of versions before counts as well.
    const prefix = `${mailbox} ${encodeURIComponent(client)} `;
    const own = `${prefix}${this.writer}`;
    const before = `${mailbox}\u0000${client}`;
    return this.locks.run(own, async () => {
      const inWindow = (record: MailTimes | undefined) =>
        (record?.sentAt ?? []).filter((at) => at > now - WINDOW_MS);
      const [each, earlier] = await Promise.all([this.records.listPrefix(prefix), this.records.get(before)]);
      const all = [...each, earlier].flatMap(inWindow).sort((a, b) => a - b);
      if (all.length >= LIMITS.emailCodeMailsPerAddress) return (all[0] as number) + WINDOW_MS - now;
      const mine = inWindow(each.length > 0 ? await this.records.get(own) : undefined);
      await this.records.put(own, { sentAt: [...mine, now] });
      return 0;
    });
  }

  /** Deletes the records whose mails all left the window; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    const gone = (record: MailTimes | undefined) =>
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
