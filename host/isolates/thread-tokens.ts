import { cpus } from "node:os";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isolateCpuClock } from "./isolate-cpu-clock.js";
import { type LaneTokens, ThreadLane, type TokenIsolate } from "./thread-lane.js";

/** Looks at the end of the event loop's next turns after a holder yielded, before the poll. */
const QUICK_LOOKS = 4;
/** While lanes wait and no token came free, the holders are looked at again this often (ms). */
const POLL_MS = 1;

/**
 * The host's tokens for running JavaScript on isolates' own threads, one per process
 * (docs/security.md "Scheduling"). isolated-vm keeps a pool of one thread per core plus one (the
 * inline sentinel holds one) and runs every further isolate that has work at the same moment on a
 * new thread, made by the thread that handed it the work, mostly the main thread, at its
 * priority. With 20 tenants busy on their threads, the main thread made and ended threads all the
 * time, each first competing with it as an equal. So an isolate's work (a start, or a platform
 * call's answer) is handed over only while its lane holds a token, and there are as many tokens as
 * the pool has free threads: what is handed over finds a pool thread, whose priority is already
 * lowered (thread-priority.ts).
 *
 * A holder gives its token back once its isolate is idle (its clock stopped, after it ran what it
 * was handed), which is known without help from the code it runs: a handler that starts a platform
 * call and computes on keeps its token. A holder that has used more than
 * {@link LIMITS.isolateThreadTurnMs} of CPU since it took its token while others wait runs on
 * without one, so a handler spinning to its CPU limit holds the others up only that long. Lanes
 * waiting take the tokens that come free, those whose isolates used the least lately first, but
 * every other token goes to the lane that has waited longest, once it waited more than
 * {@link LIMITS.isolateThreadWaitMs}: thirty lanes of light work each, always using a little less,
 * kept a slightly heavier tenant waiting for seconds. Every other, not each: on a saturated host
 * every heavy lane has waited that long, and taking them first in turn kept a light one waiting
 * behind all of them.
 *
 * Busy holders run at a low priority, so on a busy machine a token can take far longer than its
 * CPU to come back, and a light tenant on its thread (moved there by one unlucky inline run) would
 * wait that long for every call. One spare token therefore goes only to light lanes, whose turns
 * lately averaged under half of {@link LIMITS.isolateThreadLightTurnMs}, while the others are all
 * held; its holder runs on without it past that much CPU, so a lane that only looked light holds
 * it up briefly. The spare is one of the pool's threads: heavy isolates share one thread fewer, and
 * no work needs a thread beyond the pool.
 */
export class ThreadTokens implements LaneTokens {
  private static instance: ThreadTokens | undefined;
  private free: number;
  /** Spare tokens (see the class comment): 1, or 0 when {@link spareTurnNs} is 0. */
  private readonly spares: number;
  /** Spare tokens free: {@link spares}, less the one held. */
  private spareFree: number;
  private readonly holders = new Set<ThreadLane>();
  /** Lanes waiting, with when each began to (performance.now()). */
  private readonly waiting = new Map<ThreadLane, number>();
  /** Whether the next token goes to the lane that waited longest (see the class comment). */
  private longestNext = true;
  private poll: NodeJS.Timeout | null = null;
  /** Quick looks left after a holder's isolate yielded (see {@link maybeIdle}). */
  private lookAgain = 0;

  constructor(
    readonly count: number,
    readonly turnNs: bigint,
    /** The clock a holder's CPU is measured on besides its isolate's (see cpu-meter.ts). */
    readonly cpuClock: () => bigint,
    /** The spare token's turn (ns); 0: no spare token. */
    readonly spareTurnNs = 0n,
    /** How long a lane waits before it goes ahead of those that used less lately (ms). */
    private readonly starvedMs: number = LIMITS.isolateThreadWaitMs,
  ) {
    this.free = count;
    this.spares = spareTurnNs > 0n ? 1 : 0;
    this.spareFree = this.spares;
  }

  /**
   * The process's tokens: as many as isolated-vm's pool has threads free (one per core), one of
   * them the spare when there are two or more.
   */
  static shared(): ThreadTokens {
    // Made once: `cpus()` reads /proc (about 0.2 ms), and every new isolate asks for the tokens.
    if (ThreadTokens.instance) return ThreadTokens.instance;
    const threads = Math.max(1, cpus().length);
    ThreadTokens.instance = new ThreadTokens(
      threads > 1 ? threads - 1 : 1,
      BigInt(LIMITS.isolateThreadTurnMs) * 1_000_000n,
      isolateCpuClock,
      threads > 1 ? BigInt(LIMITS.isolateThreadLightTurnMs) * 1_000_000n : 0n,
    );
    return ThreadTokens.instance;
  }

  /** A lane for one isolate. */
  lane(isolate: TokenIsolate): ThreadLane {
    return new ThreadLane(this, isolate);
  }

  /** Tokens in all, the spare included: the pool threads isolates may run on at once. */
  get total(): number {
    return this.count + this.spares;
  }

  /** Tokens held now, the spare included (for tests and diagnostics). */
  get held(): number {
    return this.holders.size;
  }

  /** Lanes waiting for a token now (for tests and diagnostics). */
  get waitingLanes(): number {
    return this.waiting.size;
  }

  /** `lane` has work to hand over: it gets a token now, or waits for one. */
  request(lane: ThreadLane): void {
    if (this.waiting.size === 0 && this.take(lane)) return;
    if (this.takeSpare(lane)) return;
    if (!this.waiting.has(lane)) this.waiting.set(lane, performance.now());
    this.settle();
  }

  /**
   * A holder's isolate reached a point where it may be idle soon (it is finishing what it ran): look
   * again at the end of the next few turns of the event loop, before the slower poll.
   */
  maybeIdle(): void {
    if (this.waiting.size === 0) return;
    const already = this.lookAgain > 0;
    this.lookAgain = QUICK_LOOKS;
    if (!already) setImmediate(this.quickLook);
  }

  private readonly quickLook = (): void => {
    this.lookAgain--;
    const before = this.waiting.size;
    this.settle();
    if (this.lookAgain > 0 && this.waiting.size > 0 && this.waiting.size === before)
      setImmediate(this.quickLook);
    else this.lookAgain = 0;
  };

  /** Gives back `lane`'s token (its isolate is gone or runs on without one). */
  release(lane: ThreadLane): void {
    if (!this.holders.delete(lane)) return;
    if (lane.onSpare) this.spareFree++;
    else this.free++;
    lane.released();
  }

  /** Forgets `lane` altogether (its isolate is gone). */
  drop(lane: ThreadLane): void {
    this.waiting.delete(lane);
    this.release(lane);
    this.settle();
  }

  private take(lane: ThreadLane): boolean {
    if (this.free === 0 || lane.holding) return false;
    this.free--;
    this.holders.add(lane);
    this.longestNext = !this.longestNext;
    lane.granted(false);
    return true;
  }

  /** Gives `lane` the spare token when it is free and the lane is light. */
  private takeSpare(lane: ThreadLane): boolean {
    if (this.spareFree === 0 || lane.holding || lane.averageTurnNs * 2 >= Number(this.spareTurnNs))
      return false;
    this.spareFree--;
    this.waiting.delete(lane);
    this.holders.add(lane);
    lane.granted(true);
    return true;
  }

  /**
   * Takes the tokens back from holders that are idle or past their turn, hands them to the lanes
   * waiting (the least used lately first), and keeps looking while lanes still wait.
   */
  private settle(): void {
    if (this.waiting.size === 0) return;
    const sharedNow = this.cpuClock();
    for (const lane of this.holders) {
      if (lane.idle() || lane.usedSinceGrant(sharedNow) > lane.turnNs()) this.release(lane);
    }
    const now = performance.now();
    const waiting = [...this.waiting].filter(([lane]) => !lane.holding);
    const order = waiting
      .map(([lane]) => ({ lane, use: lane.recentUse(now) }))
      .sort((a, b) => a.use - b.use)
      .map(({ lane }) => lane);
    const starved = this.starvedFirst(waiting, now);
    if (starved) {
      order.splice(order.indexOf(starved), 1);
      order.unshift(starved);
    }
    for (const lane of order) {
      if (this.take(lane)) this.waiting.delete(lane);
      else if (this.free === 0 && this.spareFree === 0) break;
      else this.takeSpare(lane);
    }
    if (this.waiting.size > 0 && this.poll === null) this.poll = setTimeout(this.repoll, POLL_MS);
  }

  /**
   * The lane that waited longest, past {@link starvedMs}, when the next token is its turn (every
   * other token, see the class comment); else undefined.
   */
  private starvedFirst(waiting: Array<[ThreadLane, number]>, now: number): ThreadLane | undefined {
    if (!this.longestNext) return undefined;
    let oldest: [ThreadLane, number] | undefined;
    for (const entry of waiting) if (!oldest || entry[1] < oldest[1]) oldest = entry;
    return oldest && now - oldest[1] >= this.starvedMs ? oldest[0] : undefined;
  }

  private readonly repoll = (): void => {
    this.poll = null;
    this.settle();
  };
}
