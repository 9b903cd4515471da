import type { IncomingMessage } from "node:http";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { clientAddressKey } from "./client-address.js";
import { FairShares, type Holding, movingBytes } from "./fair-shares.js";
import type { RequestQuota } from "./request-quota.js";

/** The most bytes of request bodies the host receives at once: from one client address, and in all. */
export interface BodyArrivalLimits {
  perClient: number;
  total: number;
}

export const DEFAULT_BODY_ARRIVAL_LIMITS: BodyArrivalLimits = {
  perClient: LIMITS.requestBodyBytesArrivingPerClient,
  total: LIMITS.requestBodyBytesArriving,
};

/** One body's share of the host's {@link BodyArrivals}: bytes taken as they arrive, all given back at its end. */
export interface BodyArrival {
  /** Counts `bytes` more of the body; the error to answer with instead when that would pass a limit. */
  take(bytes: number): PlatformError | undefined;
  /** The body arrived, failed or was refused: its bytes no longer count. Safe to call twice. */
  end(): void;
}

const UNCOUNTED: BodyArrival = { take: () => undefined, end: () => {} };

/**
 * Bytes of request bodies arriving at once, per client address and in all. A body is held in
 * memory while it arrives, and its sender sets the pace: an address that opens many requests and
 * sends each body all but its last byte would otherwise hold as much of the host's memory as it
 * has connections. Kept on the Koa app's context (see {@link bodyArrival}), so every route that
 * reads a body counts it. Once the host receives all it may, an address within an even share is
 * not refused: bodies that stood still, of the addresses above an even share, are dropped for it
 * (see {@link FairShares}).
 */
export class BodyArrivals {
  private readonly shares: FairShares;
  private readonly held: FairShares["held"];

  constructor(
    private readonly limits: BodyArrivalLimits,
    /** The client address of a request, as the host's other per-client limits key it. */
    private readonly clientOf: (req: IncomingMessage) => string,
    /** The clock that tells a body standing still (ms; tests give their own). */
    now: () => number = Date.now,
  ) {
    this.shares = new FairShares(now);
    this.held = this.shares.held;
  }

  /**
   * The arrivals of a host whose per-client limits are `quota`'s: per client only while quotas are
   * on, as the host's other per-client limits; `limits` default to LIMITS'.
   */
  static forHost(
    quota: Pick<RequestQuota, "enabled" | "clientAddress">,
    limits: Partial<BodyArrivalLimits> = {},
  ): BodyArrivals {
    const perClient = limits.perClient ?? DEFAULT_BODY_ARRIVAL_LIMITS.perClient;
    return new BodyArrivals(
      {
        perClient: quota.enabled ? perClient : Number.POSITIVE_INFINITY,
        total: limits.total ?? DEFAULT_BODY_ARRIVAL_LIMITS.total,
      },
      (req) => quota.clientAddress(req),
    );
  }

  /** Starts counting the body of `req`. */
  begin(req: IncomingMessage): BodyArrival {
    return new CountedArrival(this, req);
  }

  /**
   * Counts `bytes` more of `arrival`'s body, arriving from `key`; the error to answer with instead
   * when that would pass a limit.
   */
  take(arrival: CountedArrival, key: string, bytes: number): PlatformError | undefined {
    if (this.held.of(key) + bytes > this.limits.perClient)
      return new PlatformError(
        "limit_exceeded",
        `Request bodies arriving from your address at once passed ${this.limits.perClient} bytes; retry once those have arrived.`,
        { retryAfterSeconds: 1 },
      );
    const total = this.limits.total;
    if (
      this.held.total + bytes > total &&
      (!this.shares.withinEvenShare(key, bytes, total) || !this.shares.makeRoom(key, bytes, total))
    )
      return new PlatformError(
        "unavailable",
        "The host is receiving as many request bodies as it holds at once; retry in 1 s.",
        { retryAfterSeconds: 1 },
      );
    if (arrival.bytes === 0 && bytes > 0) this.shares.track(key, arrival);
    this.held.add(key, bytes);
    return undefined;
  }

  /** Stops counting `arrival`'s `bytes`, arrived from `key`. */
  release(arrival: CountedArrival, key: string, bytes: number): void {
    this.held.remove(key, bytes);
    this.shares.untrack(key, arrival);
  }

  /** The client address key of `req`, as the per-client limit counts it. */
  keyOf(req: IncomingMessage): string {
    return clientAddressKey(this.clientOf(req));
  }

  /** The clock holdings' `movedAt` reads (ms). */
  now(): number {
    return this.shares.now();
  }

  /** Bytes of request bodies arriving now, in all (a metric). */
  get arriving(): number {
    return this.held.total;
  }
}

/**
 * One body's share of {@link BodyArrivals}, and its holding in their fair shares. A class, not an
 * object literal of closures: a literal with a getter (`bytes`) made per request kept each
 * request's objects alive through young collections (V8 keeps an accessor's closure in the old
 * generation), about 1.9 KB of every request promoted and young collections 3 times as costly.
 */
class CountedArrival implements BodyArrival, Holding {
  readonly droppable = true;
  /** Found at the first bytes: a request without a body never looks its client up. */
  private key: string | undefined;
  private held = 0;
  private movedAtMs = 0;
  /** What was held when it last moved: it moves again once `heldMovingBytes` more have arrived. */
  private heldWhenMoved = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly arrivals: BodyArrivals,
    private readonly req: IncomingMessage,
  ) {}

  get bytes(): number {
    return this.held;
  }

  movedAt(): number {
    return this.movedAtMs;
  }

  drop(): void {
    this.end();
    this.req.destroy();
  }

  take(bytes: number): PlatformError | undefined {
    this.key ??= this.arrivals.keyOf(this.req);
    const refused = this.arrivals.take(this, this.key, bytes);
    if (refused) return refused;
    this.held += bytes;
    if (this.held - this.heldWhenMoved >= movingBytes(this.held)) {
      this.heldWhenMoved = this.held;
      this.movedAtMs = this.arrivals.now();
    }
    return undefined;
  }

  end(): void {
    if (this.held === 0 || this.key === undefined) return;
    this.arrivals.release(this, this.key, this.held);
    this.held = 0;
  }
}

/** Where {@link BodyArrivals} lives on the app's context. */
interface WithArrivals {
  bodyArrivals?: BodyArrivals;
}

/** Makes every request of `context` (a Koa app's `app.context`) count its body against `arrivals`. */
export function countBodyArrivals(context: object, arrivals: BodyArrivals): void {
  (context as WithArrivals).bodyArrivals = arrivals;
}

/** The share of the host's body arrivals of the request of `ctx` (none counted outside an app that counts). */
export function bodyArrival(ctx: Context): BodyArrival {
  return (ctx as WithArrivals).bodyArrivals?.begin(ctx.req) ?? UNCOUNTED;
}
