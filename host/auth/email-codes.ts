import { randomInt } from "node:crypto";
import { createTransport, type Transporter } from "nodemailer";
import { PlatformError } from "../../sdk/values/index.js";
import type { HostDatabase, RecordStore } from "../db/index.js";
import { hashSecret, matchesHash } from "./developers.js";

/** How email codes are delivered: an SMTP URL, or the host log when none is configured. */
export interface EmailOptions {
  /** e.g. `smtp://user:pass@mail.example.com:587` */
  smtpUrl?: string;
  from?: string;
  /** Where codes go when no SMTP transport is configured (the host log). */
  log: (line: Record<string, unknown>) => void;
}

interface PendingCode {
  codeHash: string;
  expiresAt: number;
  attempts: number;
}

/** Codes live 10 minutes and allow 5 wrong guesses. */
export const EMAIL_CODE_LIFETIME_MS = 10 * 60_000;
export const EMAIL_CODE_ATTEMPTS = 5;

/**
 * One-time sign-in codes sent by email. Only a hash of each code is stored; a code works once,
 * for one deployment and one address.
 */
export class EmailCodes {
  private readonly codes: RecordStore<PendingCode>;
  private readonly transport: Transporter | undefined;

  constructor(
    db: HostDatabase,
    private readonly options: EmailOptions,
  ) {
    this.codes = db.records<PendingCode>("email-codes");
    this.transport = options.smtpUrl ? createTransport(options.smtpUrl) : undefined;
  }

  /** Creates a code for `email` in `deployment` and sends it. */
  async start(deployment: string, email: string): Promise<void> {
    const code = String(randomInt(0, 1_000_000)).padStart(6, "0");
    await this.codes.put(`${deployment}/${email}`, {
      codeHash: hashSecret(`${deployment}/${email}/${code}`),
      expiresAt: Date.now() + EMAIL_CODE_LIFETIME_MS,
      attempts: 0,
    });
    if (!this.transport) {
      this.options.log({
        event: "email_code",
        deployment,
        email,
        code,
        note: "no SMTP transport is configured; the code is logged instead",
      });
      return;
    }
    try {
      await this.transport.sendMail({
        from: this.options.from ?? "platform <no-reply@localhost>",
        to: email,
        subject: `Your sign-in code: ${code}`,
        text: `Your sign-in code for ${deployment} is ${code}. It expires in 10 minutes.`,
      });
    } catch (error) {
      throw new PlatformError("unavailable", "The sign-in email could not be sent; try again later.", {
        cause: error,
      });
    }
  }

  /** Checks a code; it is consumed on success. Wrong, expired or exhausted codes are refused. */
  async verify(deployment: string, email: string, code: unknown): Promise<void> {
    const key = `${deployment}/${email}`;
    const pending = await this.codes.get(key);
    const refused = () => new PlatformError("unauthorized", "That code is not valid; request a new one.");
    if (!pending || pending.expiresAt < Date.now() || pending.attempts >= EMAIL_CODE_ATTEMPTS)
      throw refused();
    if (
      typeof code !== "string" ||
      !/^\d{6}$/.test(code) ||
      !matchesHash(`${deployment}/${email}/${code}`, pending.codeHash)
    ) {
      await this.codes.put(key, Object.assign({}, pending, { attempts: pending.attempts + 1 }));
      throw refused();
    }
    await this.codes.delete(key);
  }
}
