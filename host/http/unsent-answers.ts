import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type Koa from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { clientAddressKey } from "./client-address.js";
import { ClientBytes } from "./client-bytes.js";
import type { RequestQuota } from "./request-quota.js";

/** The most bytes of answers waiting to be read: by one client address, and in all; and for how long. */
export interface UnsentAnswerLimits {
  perClient: number;
  total: number;
  /** How long (ms) an answer may go without a byte of it sent before its connection is closed. */
  waitMs: number;
}

const DEFAULT_UNSENT_ANSWER_LIMITS: UnsentAnswerLimits = {
  perClient: LIMITS.answerBytesUnsentPerClient,
  total: LIMITS.answerBytesUnsent,
  waitMs: LIMITS.answerUnsentMs,
};

/**
 * The bytes of an answer: a body Koa writes at once, or a stream of known length (a download: its
 * file stays open, or its bytes in memory, until its client reads them). Other streams pace
 * themselves and are not counted.
 */
function bodyBytes(body: unknown, length: number | undefined): number {
  if (typeof body === "string") return Buffer.byteLength(body);
  if (Buffer.isBuffer(body)) return body.length;
  if (body instanceof Readable) return length ?? 0;
  return 0;
}

/**
 * Whether a request only read (its answer may be refused after it ran): a query, or a GET or HEAD
 * that is not a capsule's endpoint declared to write (`readOnly: false` runs as a mutation).
 */
function readsOnly(ctx: Koa.Context): boolean {
  const endpoint = ctx.state.endpoint as { readOnly?: boolean } | undefined;
  if (endpoint) return endpoint.readOnly === true;
  return ctx.method === "GET" || ctx.method === "HEAD" || ctx.path.startsWith("/api/query/");
}

/**
 * Drops the answer made (closing a stream's file), and every header set while it was made (a
 * capsule's cookies and redirects, caching), so that an error goes instead, never cached.
 */
function discardAnswer(ctx: Koa.Context, headersBefore: ReadonlySet<string>): void {
  if (ctx.body instanceof Readable) ctx.body.destroy();
  ctx.body = null;
  for (const header of ctx.res.getHeaderNames()) if (!headersBefore.has(header)) ctx.remove(header);
  ctx.set("Cache-Control", "no-store");
}

/** The refusal of a request (or a read's answer) while its address holds more than `perClient` unread. */
const addressFull = (perClient: number) =>
  new PlatformError(
    "limit_exceeded",
    `Answers to your address not yet read passed ${perClient} bytes; retry in a moment (a client that stops reading its answers holds them).`,
    { retryAfterSeconds: 1 },
  );

/** The refusal while the host holds all the unread answers it may. */
const hostFull = () =>
  new PlatformError(
    "unavailable",
    "The host holds as many answers waiting to be read as it can; retry in 1 s.",
    {
      retryAfterSeconds: 1,
    },
  );

/** An answer counted until it is read: its bytes, whether it answers a read. */
interface HeldAnswer {
  bytes: number;
  read: boolean;
  /** Stops counting it, and closes its connection (its client gets nothing more of it). */
  evict(): void;
}

/**
 * Bytes of answers (whole bodies, as queries and endpoints answer) handed to the server and not yet
 * read by their clients, per client address and in all. An answer stays in memory until its client
 * reads it, and a client that never reads would otherwise hold as much of the host's memory as it
 * makes requests. An address past its share is refused further requests until its answers drain,
 * and a connection whose answer made no progress for {@link UnsentAnswerLimits.waitMs} is closed.
 * Checked as a request arrives, and again as a read's answer is made: requests in flight at once
 * all passed the first check.
 *
 * Once the host holds all it may, an address holding less than an even share is not refused: the
 * oldest unread answers to reads of the addresses holding the most are dropped to make room. Nine
 * addresses that opened about 100 downloads of 5 MiB and never read them filled the host's 512 MiB,
 * and every tenant's reads were refused for as long as they kept them open (an attack review).
 */
export class UnsentAnswers {
  private readonly held = new ClientBytes();
  /** Each address's answers still counted, oldest first. */
  private readonly answers = new Map<string, Set<HeldAnswer>>();

  constructor(
    private readonly limits: UnsentAnswerLimits,
    private readonly quota: Pick<RequestQuota, "clientAddress">,
  ) {}

  /** The answers of a host whose per-client limits are `quota`'s: per client only while quotas are on. */
  static forHost(
    quota: Pick<RequestQuota, "enabled" | "clientAddress">,
    limits: Partial<UnsentAnswerLimits> = {},
  ): UnsentAnswers {
    const merged = Object.assign({}, DEFAULT_UNSENT_ANSWER_LIMITS, limits);
    if (!quota.enabled) merged.perClient = Number.POSITIVE_INFINITY;
    return new UnsentAnswers(merged, quota);
  }

  /** Bytes of answers not yet read, in all (tests read it). */
  get unsent(): number {
    return this.held.total;
  }

  /** Refuses requests while their address's (or everyone's) answers wait; counts each answer until it is read. */
  middleware(): Koa.Middleware {
    return async (ctx, next) => {
      const key = clientAddressKey(this.quota.clientAddress(ctx.req));
      if (this.held.of(key) > this.limits.perClient) throw addressFull(this.limits.perClient);
      if (this.held.total > this.limits.total && !this.withinEvenShare(key, 0)) throw hostFull();
      const headersBefore = new Set(ctx.res.getHeaderNames());
      await next();
      const bytes = bodyBytes(ctx.body, ctx.length);
      if (bytes <= 0) return;
      // Requests in flight at once all passed the check above: a read's answer that would take its
      // address (or the host) past the limit is refused now, before its bytes are handed over. A
      // write's answer goes anyway: the write happened, and its caller must learn so.
      const refusal = readsOnly(ctx) ? this.refusalOf(key, bytes) : undefined;
      if (refusal) {
        discardAnswer(ctx, headersBefore);
        throw refusal;
      }
      this.hold(key, bytes, ctx.res, readsOnly(ctx));
    };
  }

  /**
   * Why an answer of `bytes` to `key` may not be held now (one to an address holding none always
   * may); past the host's limit, room is made for an address within an even share (see the class).
   */
  private refusalOf(key: string, bytes: number): PlatformError | undefined {
    const mine = this.held.of(key);
    if (mine > 0 && mine + bytes > this.limits.perClient) return addressFull(this.limits.perClient);
    if (this.held.total > 0 && this.held.total + bytes > this.limits.total) {
      if (!this.withinEvenShare(key, bytes) || !this.makeRoom(key, bytes)) return hostFull();
    }
    return undefined;
  }

  /** Whether `key`, with `bytes` more, holds no more than the host's limit shared by every address holding some. */
  private withinEvenShare(key: string, bytes: number): boolean {
    const holders = this.answers.size + (this.answers.has(key) ? 0 : 1);
    return this.held.of(key) + bytes <= this.limits.total / holders;
  }

  /**
   * Drops the oldest unread answers to reads of the addresses holding the most, as long as they
   * hold more than `key` would, until an answer of `bytes` to `key` fits; drops none unless that
   * is enough. True when it fits now.
   */
  private makeRoom(key: string, bytes: number): boolean {
    const need = this.held.total + bytes - this.limits.total;
    const after = this.held.of(key) + bytes;
    // Every other address: what it would still hold, and its answers to reads not chosen yet.
    const others = [...this.answers]
      .filter(([other]) => other !== key)
      .map(([other, answers]) => ({
        holds: this.held.of(other),
        reads: [...answers].filter((answer) => answer.read),
      }));
    const dropped: HeldAnswer[] = [];
    let freed = 0;
    while (freed < need) {
      let heaviest: (typeof others)[number] | undefined;
      for (const other of others)
        if (other.reads.length > 0 && other.holds > after && other.holds > (heaviest?.holds ?? 0))
          heaviest = other;
      const answer = heaviest?.reads.shift();
      if (!heaviest || !answer) return false;
      heaviest.holds -= answer.bytes;
      dropped.push(answer);
      freed += answer.bytes;
    }
    for (const answer of dropped) answer.evict();
    return true;
  }

  private hold(key: string, bytes: number, res: ServerResponse, read: boolean): void {
    // The client left while the answer was made: nothing will be written, and no event comes.
    if (res.destroyed || res.writableFinished) return;
    this.held.add(key, bytes);
    // Bytes the socket handed to the system (`bytesWritten` counts those still queued too).
    const dispatched = () => (res.socket ? res.socket.bytesWritten - res.socket.writableLength : 0);
    let sent = 0;
    // Read once Koa has written the answer (after this middleware returns): what the system took at once.
    setImmediate(() => {
      sent = dispatched();
    });
    const stalled = () => {
      const now = dispatched();
      if (now === sent) return res.destroy();
      sent = now;
      deadline.refresh();
    };
    const deadline = setTimeout(stalled, this.limits.waitMs);
    deadline.unref();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(deadline);
      this.held.remove(key, bytes);
      const mine = this.answers.get(key);
      mine?.delete(answer);
      if (mine?.size === 0) this.answers.delete(key);
    };
    const answer: HeldAnswer = {
      bytes,
      read,
      evict: () => {
        release();
        res.destroy();
      },
    };
    let mine = this.answers.get(key);
    if (!mine) {
      mine = new Set();
      this.answers.set(key, mine);
    }
    mine.add(answer);
    res.once("finish", release);
    res.once("close", release);
  }
}
