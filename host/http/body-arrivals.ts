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

/**
 * One body's share of the host's {@link BodyArrivals}: bytes taken as they arrive, all given back at
 * its end. `take` and `end` are methods: call them on the arrival, never detached.
 */
export interface BodyArrival {
  /** Counts `bytes` more of the body; the error to answer with instead when that would pass a limit. */
  take(bytes: number): PlatformError | undefined;
  /** The body arrived, failed or was refused: its bytes no longer count. Safe to call twice. */
  end(): void;
}

const UNCOUNTED: BodyArrival = { take: () => undefined, end: () => {} };

/**
 * The counts behind {@link BodyArrivals}: what each {@link CountedArrival} takes as its body
 * arrives and gives back at its end. Only this module's arrivals call it, so what is taken is
 * always given back.
 */
class ArrivalCounts {
  readonly shares: FairShares;
  readonly held: FairShares["held"];

  constructor(
    private readonly limits: BodyArrivalLimits,
    /** The client address of a request, as the host's other per-client limits key it. */
    private readonly clientOf: (req: IncomingMessage) => string,
    now: () => number,
  ) {
    this.shares = new FairShares(now);
    this.held = this.shares.held;
  }

  /** The client address key of `req`, as the per-client limit counts it. */
  keyOf(req: IncomingMessage): string {
    return clientAddressKey(this.clientOf(req));
  }

  /**
   * Counts `bytes` more of `arrival`'s body (from `key`; `arrival.bytes` not yet counting them);
   * the error to answer with instead when that would pass a limit.
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

  /** Gives back all `bytes` of `arrival`'s body, from `key`. */
  release(arrival: CountedArrival, key: string, bytes: number): void {
    this.held.remove(key, bytes);
    this.shares.untrack(key, arrival);
  }
}

/**
 * One body's share of {@link BodyArrivals}, and its holding in their fair shares; its `take` and
 * `end` are methods, called on it. A class, not an object literal: the literal this was, with a
 * getter (`bytes`) and made per request, had about 1.9 KB of every request promoted to the old
 * generation, and the host's young collections cost 3 times as much (bench/HISTORY.md, 2026-12-05);
 * the same literal without the getter did not.
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
    private readonly counts: ArrivalCounts,
    private readonly req: IncomingMessage,
    private readonly stop: () => void,
  ) {}

  get bytes(): number {
    return this.held;
  }

  movedAt(): number {
    return this.movedAtMs;
  }

  drop(): void {
    this.end();
    this.stop();
  }

  take(bytes: number): PlatformError | undefined {
    this.key ??= this.counts.keyOf(this.req);
    const refused = this.counts.take(this, this.key, bytes);
    if (refused) return refused;
    this.held += bytes;
    if (this.held - this.heldWhenMoved >= movingBytes(this.held)) {
      this.heldWhenMoved = this.held;
      this.movedAtMs = this.counts.shares.now();
    }
    return undefined;
  }

  end(): void {
    if (this.held === 0 || this.key === undefined) return;
    this.counts.release(this, this.key, this.held);
    this.held = 0;
  }
}

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
  private readonly counts: ArrivalCounts;

  constructor(
    limits: BodyArrivalLimits,
    /** The client address of a request, as the host's other per-client limits key it. */
    clientOf: (req: IncomingMessage) => string,
    /** The clock that tells a body standing still (ms; tests give their own). */
    now: () => number = Date.now,
  ) {
    this.counts = new ArrivalCounts(limits, clientOf, now);
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

  /**
   * Starts counting the body of `req`, or what arrives on its upgraded socket; `stop` ends it when
   * it is dropped for another address's room (by default, the request is destroyed).
   */
  begin(req: IncomingMessage, stop: () => void = () => req.destroy()): BodyArrival {
    return new CountedArrival(this.counts, req, stop);
  }

  /** Bytes of request bodies arriving now, in all (a metric). */
  get arriving(): number {
    return this.counts.held.total;
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
