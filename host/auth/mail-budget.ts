import { LIMITS } from "../../sdk/protocol/index.js";
import type { HostDatabase, RecordStore } from "../db/index.js";

const WINDOW_MS = LIMITS.emailCodeWindowSeconds * 1000;

/**
 * Sign-in mails one address may be sent by the whole installation in a window, every deployment
 * together (`LIMITS.emailCodeMailsPerAddress`): each deployment's own limit alone let one client
 * have every deployment of a host mail a victim (5 mails per deployment per window). Stored, and
 * taken under a lock across hosts, so every host sharing the database counts the same mails.
 */
export class MailBudget {
  private readonly records: RecordStore<{ sentAt: number[] }>;

  constructor(private readonly db: HostDatabase) {
    this.records = db.records<{ sentAt: number[] }>("email-mails");
  }

  /** Takes one mail to `email` at `now`: 0, or the ms until the address may be mailed again. */
  take(email: string, now = Date.now()): Promise<number> {
    return this.db.exclusive(`email-mails:${email}`, async () => {
      const sentAt = ((await this.records.get(email))?.sentAt ?? []).filter((at) => at > now - WINDOW_MS);
      if (sentAt.length >= LIMITS.emailCodeMailsPerAddress) return (sentAt[0] as number) + WINDOW_MS - now;
      sentAt.push(now);
      await this.records.put(email, { sentAt });
      return 0;
    });
  }

  /** Deletes the records of addresses whose mails all left the window; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    const gone = (record: { sentAt: number[] } | undefined) =>
      record?.sentAt.every((at) => at <= now - WINDOW_MS) === true;
    let deleted = 0;
    for await (const page of this.records.entryPages())
      for (const [email, record] of page) {
        if (!gone(record)) continue;
        deleted += await this.db.exclusive(`email-mails:${email}`, async () => {
          if (!gone(await this.records.get(email))) return 0;
          await this.records.delete(email);
          return 1;
        });
      }
    return deleted;
  }
}
