import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type Koa from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { clientAddressKey } from "./client-address.js";
import { FairShares, type Holding, movingBytes } from "./fair-shares.js";
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

const pacedItself = new WeakSet<Koa.Context>();

/**
 * Leaves the answer of `ctx` out of the count: a stream of known length that holds neither memory
 * nor more than one open file per caller, and stops its client itself when it reads too slowly
 * (an export: one per developer, its archive on disk).
 */
export function pacedByItself(ctx: Koa.Context): void {
  pacedItself.add(ctx);
}

/** Answers held in memory above this size are written in slices of {@link SLICE_BYTES}. */
const SLICED_ABOVE_BYTES = 256 * 1024;
const SLICE_BYTES = 64 * 1024;

/**
 * `body` (a string or bytes) as a stream of slices: the host sees an answer written in one piece
 * move only once the kernel took all of it, so a client reading a large one steadily looked
 * standing still (and was dropped for others, or closed after 120 s).
 */
function inSlices(body: string | Buffer): Readable {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  let at = 0;
  return new Readable({
    read() {
      const end = Math.min(bytes.length, at + SLICE_BYTES);
      this.push(bytes.subarray(at, end));
      at = end;
      if (at === bytes.length) this.push(null);
    },
  });
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

/**
 * Bytes of answers (whole bodies, as queries and endpoints answer) handed to the server and not yet
 * read by their clients, per client address and in all. An answer stays in memory until its client
 * reads it, and a client that never reads would otherwise hold as much of the host's memory as it
 * makes requests. An address past its share is refused further requests until its answers drain,
 * and a connection whose answer made no progress for {@link UnsentAnswerLimits.waitMs} is closed.
 * Checked as a request arrives, and again as a read's answer is made: requests in flight at once
 * all passed the first check.
 *
 * Once the host holds all it may, an address within an even share is not refused: unread answers
 * to reads that stood still, of the addresses above an even share, are dropped to make room (see
 * {@link FairShares}). Nine addresses that opened about 100 downloads of 5 MiB and never read them
 * filled the host's 512 MiB, and every tenant's reads were refused for as long as they kept them
 * open (an attack review).
 */
export class UnsentAnswers {
  private readonly shares = new FairShares();
  private readonly held = this.shares.held;

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
      if (this.held.total > this.limits.total && !this.shares.withinEvenShare(key, 0, this.limits.total))
        throw hostFull();
      const headersBefore = new Set(ctx.res.getHeaderNames());
      await next();
      const bytes = pacedItself.has(ctx) ? 0 : bodyBytes(ctx.body, ctx.length);
      // Nothing to count (or to make room for: the client left while it was made).
      if (bytes <= 0 || ctx.res.destroyed) return;
      // Requests in flight at once all passed the check above: a read's answer that would take its
      // address (or the host) past the limit is refused now, before its bytes are handed over. A
      // write's answer goes anyway: the write happened, and its caller must learn so.
      const refusal = readsOnly(ctx) ? this.refusalOf(key, bytes) : undefined;
      if (refusal) {
        discardAnswer(ctx, headersBefore);
        throw refusal;
      }
      if (bytes > SLICED_ABOVE_BYTES && (typeof ctx.body === "string" || Buffer.isBuffer(ctx.body))) {
        ctx.body = inSlices(ctx.body);
        ctx.length = bytes;
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
      const total = this.limits.total;
      if (!this.shares.withinEvenShare(key, bytes, total) || !this.shares.makeRoom(key, bytes, total))
        return hostFull();
    }
    return undefined;
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
      seen = sent;
    });
    // When its client last read some of it (see FairShares), as the shares look.
    let seen = 0;
    let movedAt = this.shares.now();
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
      this.shares.untrack(key, answer);
    };
    const look = () => {
      // Queued behind another answer on its connection (pipelined): not standing still.
      if (!res.socket) {
        movedAt = this.shares.now();
        return;
      }
      // A trickle is standing still: it moves once enough more of it was read (see movingBytes).
      const now = dispatched();
      if (now - seen >= movingBytes(bytes)) {
        seen = now;
        movedAt = this.shares.now();
      }
    };
    // Only a read's answer is dropped to make room: a write's caller must learn the write happened.
    const answer: Holding = {
      bytes,
      droppable: read,
      movedAt: () => {
        look();
        return movedAt;
      },
      look,
      drop: () => {
        release();
        res.destroy();
      },
    };
    this.shares.track(key, answer);
    res.once("finish", release);
    res.once("close", release);
  }
}
