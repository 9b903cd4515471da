import { movingAverage } from "./inline/moving-average.js";

/** How recent use fades when lanes are compared (ms): a lane's use halves over this much time. */
const USE_HALF_LIFE_MS = 1000;

/** What a lane reads of its isolate: its CPU clock, which advances only while its thread runs it. */
export interface TokenIsolate {
  readonly isDisposed: boolean;
  /** isolated-vm's figure (ns, a steady clock): it moves between two reads only while the isolate runs. */
  readonly cpuTime: bigint;
}

/** What a lane needs of the host's run tokens (thread-tokens.ts). */
export interface LaneTokens {
  /** A turn on a plain token (ns of CPU). */
  readonly turnNs: bigint;
  /** A turn on the spare token (ns of CPU). */
  readonly spareTurnNs: bigint;
  /** The clock a holder's CPU is measured on besides its isolate's. */
  readonly cpuClock: () => bigint;
  /** The lane has work to hand over. */
  request(lane: ThreadLane): void;
  /** A holder's isolate may be idle soon. */
  maybeIdle(): void;
  /** Forgets the lane (its isolate is gone). */
  drop(lane: ThreadLane): void;
}

/**
 * One isolate's way to its thread: work handed over while it holds one of the host's run tokens
 * (thread-tokens.ts), and kept in order until it gets one.
 */
export class ThreadLane {
  holding = false;
  /** True while the token held is the spare one. */
  onSpare = false;
  /** CPU per turn on a token (ns), a moving average: 0 until the first turn ended. */
  averageTurnNs = 0;
  private readonly queued: Array<() => unknown> = [];
  /** The isolate's clock when work was last handed over: it must have moved since to be idle. */
  private clockAtPost = -1n;
  private clockAtGrant = 0n;
  private sharedAtGrant = 0n;
  /** Recent use (ms of CPU while holding a token), as of {@link usedAtMs}. */
  private use = 0;
  private usedAtMs = 0;
  private closed = false;

  constructor(
    private readonly tokens: LaneTokens,
    private readonly isolate: TokenIsolate,
  ) {}

  /**
   * Runs `work`, which hands the isolate something to run (or returns false when it found nothing
   * left to hand over), now if this lane holds a token and has not used up its turn, else once it
   * gets one. After {@link close}, at once.
   */
  post(work: () => unknown): void {
    if (this.closed || (this.holding && this.withinTurn())) {
      this.handOver(work);
      return;
    }
    this.queued.push(work);
    this.tokens.request(this);
  }

  /** The isolate made a platform call or finished an execution: it may be idle soon. */
  yielded(): void {
    if (this.holding) this.tokens.maybeIdle();
  }

  /** The isolate is gone: its token goes back, and what waits is handed over (to nothing). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.tokens.drop(this);
    for (const work of this.queued.splice(0)) work();
  }

  /** True when the isolate ran since it was last handed work and is not running now, or is gone. */
  idle(): boolean {
    const first = clockOf(this.isolate);
    if (first === undefined) return true;
    return first > this.clockAtPost && clockOf(this.isolate) === first;
  }

  /** True while the isolate has used less than a turn since this lane took its token. */
  withinTurn(): boolean {
    return this.usedSinceGrant(this.tokens.cpuClock()) <= this.turnNs();
  }

  /** The CPU this lane may use on the token it holds while others wait (ns). */
  turnNs(): bigint {
    return this.onSpare ? this.tokens.spareTurnNs : this.tokens.turnNs;
  }

  /** CPU the isolate used since this lane took its token (ns; waits for a core left out as far as known). */
  usedSinceGrant(sharedNow: bigint): bigint {
    const own = (clockOf(this.isolate) ?? this.clockAtGrant) - this.clockAtGrant;
    const shared = sharedNow - this.sharedAtGrant;
    return shared > 0n && shared < own ? shared : own;
  }

  /** The CPU this lane's isolate used on tokens lately (ms), fading with time. */
  recentUse(nowMs: number): number {
    return this.use * 0.5 ** ((nowMs - this.usedAtMs) / USE_HALF_LIFE_MS);
  }

  granted(spare: boolean): void {
    this.holding = true;
    this.onSpare = spare;
    this.clockAtGrant = clockOf(this.isolate) ?? 0n;
    this.sharedAtGrant = this.tokens.cpuClock();
    for (const work of this.queued.splice(0)) this.handOver(work);
  }

  released(): void {
    this.holding = false;
    this.onSpare = false;
    const now = performance.now();
    const turnNs = Number(this.usedSinceGrant(this.tokens.cpuClock()));
    this.use = this.recentUse(now) + turnNs / 1e6;
    this.usedAtMs = now;
    this.averageTurnNs = movingAverage(this.averageTurnNs, turnNs);
  }

  /** Runs `work`; when it handed the isolate something (it did not return false), the isolate must run before it is idle. */
  private handOver(work: () => unknown): void {
    const before = clockOf(this.isolate);
    if (work() !== false && before !== undefined) this.clockAtPost = before;
  }
}

/** The isolate's CPU clock; undefined once it is gone (isolated-vm may dispose it on its own thread). */
export function clockOf(isolate: TokenIsolate): bigint | undefined {
  if (isolate.isDisposed) return undefined;
  try {
    return isolate.cpuTime;
  } catch {
    return undefined;
  }
}
