import { randomBytes, randomInt } from "node:crypto";
import { createTransport, type Transporter } from "nodemailer";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { FencedWork, HostDatabase, RecordStore } from "../db/index.js";
import { hashSecret, matchesHash } from "./developers.js";
import { MailBudget } from "./mail-budget.js";
import { mailboxKey } from "./mailbox.js";

/** A sign-in code that no SMTP transport carried: the host hands it to whoever runs it. */
export interface UnsentCode {
  deployment: string;
  email: string;
  code: string;
  /** When the code stops working (ms since the epoch). */
  expiresAt: number;
}

/** How email codes are delivered: an SMTP URL, or `unsent` when none is configured. */
export interface EmailOptions {
  /** e.g. `smtp://user:pass@mail.example.com:587` */
  smtpUrl?: string;
  from?: string;
  /** Where codes go when no SMTP transport is configured (the host log, or `platform dev`'s terminal). */
  unsent: (code: UnsentCode) => void;
}

/** The code of one sign-in attempt; only hashes are stored. */
interface PendingCode {
  codeHash: string;
  /** Hash of the handle `start` gave the asker: the code works only with it (or one of `alsoAttempts`). */
  attemptHash: string;
  /** Hashes of handles given to later requests while the address had all the codes it may get. */
  alsoAttempts?: string[];
  expiresAt: number;
  wrongGuesses: number;
}

/** Handles one code may be given past the first (see {@link EmailCodes.start}). */
const MORE_ATTEMPTS_PER_CODE = 8;

/** Whether `attempt` is a handle of `code`. */
function isAttemptOf(attempt: string, code: PendingCode): boolean {
  return (
    matchesHash(attempt, code.attemptHash) ||
    (code.alsoAttempts ?? []).some((hash) => matchesHash(attempt, hash))
  );
}

/**
 * What is kept per deployment and address: the codes not used yet (one per request in the window,
 * each bound to its own sign-in, so a request from elsewhere never voids the code someone is
 * typing), and when codes were sent to this exact address (the window). `code`: the one live code
 * of records written before several were kept.
 */
interface AddressRecord {
  codes?: PendingCode[];
  code?: PendingCode;
  sentAt: number[];
}

/** The codes of `record` that may still be entered at `now`. */
function liveCodes(record: AddressRecord | undefined, now: number): PendingCode[] {
  const codes = record?.codes ?? (record?.code ? [record.code] : []);
  return codes.filter((code) => code.expiresAt >= now && code.wrongGuesses < LIMITS.emailCodeAttempts);
}

/**
 * The outcome of a code request: the attempt handle and whether a mail with a new code was sent
 * (else the handle is for the newest code sent already), or how long to wait before asking again.
 */
export type CodeRequest =
  | { attempt: string; sent: boolean }
  | { retryAfterSeconds: number; limitedBy: string };

const WINDOW_MS = LIMITS.emailCodeWindowSeconds * 1000;

const refused = () =>
  new PlatformError("unauthorized", "That code is not valid; check it, or request a new one.");

/** The same whether the address has codes or not: the answer tells nobody that someone signs in with it. */
const notThisSignIn = () =>
  new PlatformError(
    "unauthorized",
    "That code does not belong to this sign-in, or it expired or was guessed wrong too often: enter it where it was requested, or request a new one here.",
  );

/**
 * One-time sign-in codes sent by email. Only hashes are stored; a code works once, for one
 * deployment and one address, and only together with the attempt handle its request answered
 * (so a code is bound to the sign-in that asked for it, and a later request, from anyone, leaves
 * it working). Guesses are read and counted under one
 * lock per deployment that holds across every host of the store, so concurrent wrong guesses all
 * count and the code dies after {@link LIMITS.emailCodeAttempts}. Requests are limited per
 * address here (stored, so every host sees them); the caller adds its per-client limit.
 */
export class EmailCodes {
  private readonly codes: RecordStore<AddressRecord>;
  private readonly mails: MailBudget;
  private readonly transport: Transporter | undefined;

  constructor(
    private readonly db: HostDatabase,
    private readonly options: EmailOptions,
  ) {
    this.codes = db.records<AddressRecord>("email-codes");
    this.mails = new MailBudget(db);
    this.transport = options.smtpUrl ? createTransport(options.smtpUrl) : undefined;
  }

  /** Runs `work` under deployment `deployment`'s lock of codes; its writes pass the lock's fence. */
  private locked<T>(deployment: string, work: FencedWork<T>): Promise<T> {
    return this.db.exclusive(`email-codes:${deployment}`, work);
  }

  /**
   * Creates a code for `email` in `deployment` and sends it, unless `takeClientAllowance` (the
   * requesting client's limit: 0 when it took one request, else the ms to wait) refuses. No mail
   * is sent past the codes the exact address may get from this deployment in the window, whoever
   * asked, nor past the mails `client` (the requester's network, as limits key it) may have had
   * sent to the address's mailbox, every spelling and deployment together (see {@link MailBudget}):
   * the request gets a handle of the address's newest live code instead (`sent: false`), so that
   * requests by someone else, which cost them only their own allowance, do not lock the owner out
   * of signing in with a code they received; with no live code (or its handles all given), it is
   * refused. Spellings merge only in the network's count: merged in the deployment's, shared by
   * everyone, `victim+x@` spent it and left `victim@` no code of its own to hand its owner. The
   * client's limit is taken before the deployment's lock, the others under it. The answer's
   * `attempt` must come back with the code.
   */
  async start(
    deployment: string,
    email: string,
    takeClientAllowance: () => number,
    client = "",
  ): Promise<CodeRequest> {
    const digits = LIMITS.emailCodeDigits;
    const code = String(randomInt(0, 10 ** digits)).padStart(digits, "0");
    const attempt = randomBytes(18).toString("base64url");
    // Before the lock: a client over its limit, refused here, neither waits for nor holds a lock
    // connection (a flood of such requests over many deployments took one each).
    const clientWait = takeClientAllowance();
    if (clientWait > 0)
      return { retryAfterSeconds: Math.ceil(clientWait / 1000), limitedBy: "your network address" };
    const outcome = await this.locked(deployment, async (fence): Promise<CodeRequest> => {
      const now = Date.now();
      const key = `${deployment}/${email}`;
      const record = await this.codes.get(key);
      const sentAt = (record?.sentAt ?? []).filter((at) => at > now - WINDOW_MS);
      const live = liveCodes(record, now);
      // Past the address's mails here, or the mailbox's from this network, the newest live code's.
      const noMail = async (waitMs: number): Promise<CodeRequest> => {
        const newest = live.at(-1);
        if (!newest || (newest.alsoAttempts?.length ?? 0) >= MORE_ATTEMPTS_PER_CODE)
          return { retryAfterSeconds: Math.ceil(waitMs / 1000), limitedBy: email };
        newest.alsoAttempts = [...(newest.alsoAttempts ?? []), hashSecret(attempt)];
        await this.codes.put(key, { codes: live, sentAt }, fence);
        return { attempt, sent: false };
      };
      if (sentAt.length >= LIMITS.emailCodeRequestsPerAddress)
        return noMail((sentAt[0] ?? now) + WINDOW_MS - now);
      const mailWait = await this.mails.take(mailboxKey(email), client, now);
      if (mailWait > 0) return noMail(mailWait);
      sentAt.push(now);
      const fresh: PendingCode = {
        codeHash: hashSecret(`${deployment}/${email}/${code}`),
        attemptHash: hashSecret(attempt),
        expiresAt: now + LIMITS.emailCodeLifetimeMs,
        wrongGuesses: 0,
      };
      await this.codes.put(key, { codes: [...live, fresh], sentAt }, fence);
      return { attempt, sent: true };
    });
    if ("attempt" in outcome && outcome.sent)
      await this.send(deployment, email, code, Date.now() + LIMITS.emailCodeLifetimeMs);
    return outcome;
  }

  private async send(deployment: string, email: string, code: string, expiresAt: number): Promise<void> {
    if (!this.transport) {
      this.options.unsent({ deployment, email, code, expiresAt });
      return;
    }
    try {
      await this.transport.sendMail({
        from: this.options.from ?? "platform <no-reply@localhost>",
        // An address, not text nodemailer would parse (normaliseEmail admits plain mailboxes only).
        to: { name: "", address: email },
        subject: `Your sign-in code: ${code}`,
        text: `Your sign-in code for ${deployment} is ${code}. It expires in ${LIMITS.emailCodeLifetimeMs / 60_000} minutes.`,
      });
    } catch (error) {
      throw new PlatformError("unavailable", "The sign-in email could not be sent; try again later.", {
        cause: error,
      });
    }
  }

  /**
   * Checks a code with the attempt handle of its request; it is consumed on success. Wrong,
   * expired or exhausted codes are refused; a wrong handle is refused without spending a guess.
   */
  async verify(deployment: string, email: string, code: unknown, attempt: unknown): Promise<void> {
    if (typeof attempt !== "string" || attempt === "")
      throw new PlatformError(
        "bad_request",
        "Send the `attempt` that POST /__platform/auth/email/start answered with, together with the code.",
      );
    // A code pasted with spaces around it is the code; anything but its digits is a slip, refused
    // before it costs one of the code's guesses.
    const typed = typeof code === "string" ? code.trim() : code;
    const digits = LIMITS.emailCodeDigits;
    if (typeof typed !== "string" || typed.length !== digits || !/^\d+$/.test(typed))
      throw new PlatformError(
        "bad_request",
        `A sign-in code is the ${digits} digits of the email, sent as a string (for example "${"0123456789".slice(0, digits)}").`,
      );
    const key = `${deployment}/${email}`;
    await this.locked(deployment, async (fence) => {
      const record = await this.codes.get(key);
      const codes = liveCodes(record, Date.now());
      const pending = codes.find((each) => isAttemptOf(attempt, each));
      if (!record || !pending) throw notThisSignIn();
      if (!matchesHash(`${deployment}/${email}/${typed}`, pending.codeHash)) {
        pending.wrongGuesses++;
        await this.codes.put(key, { codes, sentAt: record.sentAt }, fence);
        throw refused();
      }
      // Signed in: every code of the address is spent.
      await this.codes.put(key, { sentAt: record.sentAt }, fence);
    });
  }

  /**
   * Deletes the records of addresses whose code is used or expired and whose requests all left the
   * window: they hold nothing any more, and without this every address ever asked for is kept. Each
   * is read again under its deployment's lock before it goes. Returns how many it deleted (the
   * installation-wide mail counts of addresses, swept too, are not counted).
   */
  async sweepEnded(now = Date.now()): Promise<number> {
    await this.mails.sweep(now);
    let deleted = 0;
    const ended = (record: AddressRecord | undefined) =>
      record !== undefined &&
      liveCodes(record, now).length === 0 &&
      record.sentAt.every((at) => at <= now - WINDOW_MS);
    for await (const page of this.codes.entryPages()) {
      const byDeployment = new Map<string, string[]>();
      for (const [id, record] of page) {
        if (!ended(record)) continue;
        const deployment = id.slice(0, id.indexOf("/"));
        byDeployment.set(deployment, [...(byDeployment.get(deployment) ?? []), id]);
      }
      for (const [deployment, ids] of byDeployment) {
        deleted += await this.locked(deployment, async (fence) => {
          const still: string[] = [];
          for (const id of ids) if (ended(await this.codes.get(id))) still.push(id);
          if (still.length > 0)
            await this.codes.batch(
              still.map((id) => ({ id, value: null })),
              [],
              fence,
            );
          return still.length;
        });
      }
    }
    return deleted;
  }
}
