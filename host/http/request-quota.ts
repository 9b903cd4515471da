import type { IncomingMessage } from "node:http";
import type { Middleware } from "koa";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { clientAddressKey, clientAddressOf } from "./client-address.js";

/** A caller's request budget: `burst` at once, refilled at `perSecond`. */
export interface QuotaSettings {
  perSecond: number;
  burst: number;
}

/** The product leaves the quota's size open; ours is in {@link LIMITS}. */
export const DEFAULT_REQUEST_QUOTA: QuotaSettings = {
  perSecond: LIMITS.requestQuotaPerSecond,
  burst: LIMITS.requestQuotaBurst,
};

/** Buckets kept before full (idle) ones are forgotten. */
const PRUNE_AT = 10_000;

/**
 * The caller a request is charged to: its identity when it has one, else its IP address (an IPv6
 * one by its /64 network: {@link clientAddressKey}).
 */
export function quotaKey(deployment: string, identity: BridgeIdentity | null, ip: string): string {
  return `${deployment}\u0000${identity ? identity.userId : `ip:${clientAddressKey(ip)}`}`;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Per-caller request quotas (token buckets), so one caller cannot take a deployment's whole
 * capacity. `false` settings turn quotas off (benchmarks, trusted single-user setups).
 */
export class RequestQuota {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly settings: QuotaSettings | false = DEFAULT_REQUEST_QUOTA,
    /** Whether the client address comes from the reverse proxy's `X-Forwarded-For` ({@link clientAddressOf}). */
    private readonly trustProxy = false,
  ) {}

  /** False when quotas are off (then the other per-client limits are off too). */
  get enabled(): boolean {
    return this.settings !== false;
  }

  /** The address of the client that sent `req`, as every per-client limit keys it. */
  clientAddress(req: IncomingMessage): string {
    return clientAddressOf(req, this.trustProxy);
  }

  private bucket(key: string, now: number): Bucket | undefined {
    if (!this.settings) return undefined;
    const { perSecond, burst } = this.settings;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= PRUNE_AT) this.prune(now);
      bucket = { tokens: burst, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    return bucket;
  }

  private prune(now: number): void {
    if (!this.settings) return;
    const { perSecond, burst } = this.settings;
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * perSecond >= burst) this.buckets.delete(key);
    }
  }

  /** Takes `cost` requests from `key`'s budget; false (and nothing taken) when it has too few. */
  tryTake(key: string, cost = 1, now = Date.now()): boolean {
    const bucket = this.bucket(key, now);
    if (!bucket) return true;
    if (bucket.tokens < cost) return false;
    bucket.tokens -= cost;
    return true;
  }

  /**
   * What sending `size` bytes costs when it is charged before it goes (a live query's push): one
   * request, and one more per {@link LIMITS.answerBytesPerRequest}, at most a burst's worth.
   */
  costOf(size: number): number {
    const cost = 1 + Math.floor(size / LIMITS.answerBytesPerRequest);
    return this.settings ? Math.min(cost, this.settings.burst) : cost;
  }

  /**
   * Charges `key` for an answer of `size` bytes, made already: one request per
   * {@link LIMITS.answerBytesPerRequest}, taken even past what it has (down to minus the burst),
   * so its next requests wait for it.
   */
  chargeAnswer(key: string, size: number, now = Date.now()): void {
    const extra = Math.floor(size / LIMITS.answerBytesPerRequest);
    if (extra > 0) this.takeAsDebt(key, extra, now);
  }

  /** Takes `cost` requests from `key`'s budget even past what it has, down to minus the burst. */
  takeAsDebt(key: string, cost: number, now = Date.now()): void {
    if (!this.settings) return;
    const bucket = this.bucket(key, now);
    if (bucket) bucket.tokens = Math.max(-this.settings.burst, bucket.tokens - cost);
  }

  /** How long until `key` has `cost` requests again (0 when it has them now). */
  waitMs(key: string, cost = 1, now = Date.now()): number {
    const bucket = this.bucket(key, now);
    if (!bucket || !this.settings || bucket.tokens >= cost) return 0;
    return Math.ceil(((cost - bucket.tokens) / this.settings.perSecond) * 1000);
  }

  /** Takes one request, or fails with `limit_exceeded` saying when to retry. */
  charge(key: string): void {
    if (this.tryTake(key)) return;
    throw this.exceeded(this.retryAfterSeconds(key));
  }

  /** Whole seconds until `key` may make a request again (at least 1), for `Retry-After`. */
  retryAfterSeconds(key: string, now = Date.now()): number {
    return Math.max(1, Math.ceil(this.waitMs(key, 1, now) / 1000));
  }

  /** The `limit_exceeded` error of a refused request: what the quota is and when to retry (`Retry-After`). */
  private exceeded(seconds: number): PlatformError {
    const settings = this.settings as QuotaSettings;
    return new PlatformError(
      "limit_exceeded",
      `Request quota exceeded: each caller may make ${settings.burst} requests at once and ${settings.perSecond} per second; retry in ${seconds} s.`,
      { retryAfterSeconds: seconds },
    );
  }
}

/**
 * The request quota as middleware: charges one request to the caller `identify` found (else the
 * client's IP address) before the route does any work, failing with `429 limit_exceeded` and a
 * `Retry-After` header, and then its answer's size (see {@link RequestQuota.chargeAnswer}). A
 * `scope` gives those routes a bucket of their own per caller (sign-in routes: a client's
 * sign-ins do not eat into its data calls, nor the reverse).
 */
export function chargeRequest(quota: RequestQuota, scope?: string): Middleware {
  return async (ctx, next) => {
    const caller = quotaKey(
      ctx.state.deployment as string,
      ctx.state.identity as BridgeIdentity | null,
      quota.clientAddress(ctx.req),
    );
    const key = scope === undefined ? caller : `${caller}\u0000${scope}`;
    quota.charge(key);
    await next();
    // Koa measured a text or bytes body as it was set (its Content-Length); a stream counts none.
    const size = ctx.response.length;
    if (typeof size === "number") quota.chargeAnswer(key, size);
  };
}
