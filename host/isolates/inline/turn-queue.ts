import { MainThreadTurns, type TurnRunner } from "./main-thread-turns.js";
import { movingAverage } from "./moving-average.js";
import type { InlinePolicy } from "./policy.js";

/** A handler's start waiting for the end of the event loop's turn. */
export type QueuedStart = { kind: "start"; requestId: number; payload: string };

/** The answer to a handler's call waiting for the end of the event loop's turn. */
export type QueuedAnswer = { kind: "answer"; requestId: number; callId: number; answer: string };

/** An inline entry waiting for the end of the event loop's turn: a handler's start or a call's answer. */
export type QueuedEntry = QueuedStart | QueuedAnswer;

/** What the queue enters through: the inline transport (see transport.ts). */
export interface TurnEntries {
  /** True when inline execution `requestId` still waits to be entered. */
  waits(requestId: number): boolean;
  /** True when the start of `requestId` may go in now (inline still suits it; nothing runs on the isolate's thread). */
  mayStart(requestId: number): boolean;
  /** Enters one start; true when the entry completed. */
  enterStart(start: QueuedStart): boolean;
  /**
   * Enters several starts in one entry; how many of them the runtime reached (0: the entry did not
   * complete, or the isolate is gone).
   */
  enterGroup(group: QueuedStart[]): number;
  /** CPU (ns) the last completed entry used. */
  readonly lastEntryNs: bigint;
  /**
   * Hands call `callId` of inline execution `requestId` its answer (or a stale call's); true when
   * an entry for a waiting execution completed.
   */
  enterAnswer(requestId: number, callId: number, answer: string): boolean;
  /** True when the answer to a call of `requestId` may share an entry with others (see {@link enterAnswers}). */
  mayShareAnswer(requestId: number): boolean;
  /**
   * Enters several answers, one execution each, in one entry; how many of them the runtime reached
   * (0: the entry did not complete, or the isolate is gone).
   */
  enterAnswers(group: QueuedAnswer[]): number;
  /** Fails a queued start that can no longer go in; its caller runs it again. */
  abandon(requestId: number): void;
  /** Inline CPU (ns) the deployment used recently (see the standing's `recentNs`, policy.ts). */
  recentNs(): number;
}

/**
 * A deployment's inline entries, which wait until the end of the turn of the event loop they were
 * made in and then go in one after another, when the main thread's turns reach them (see
 * main-thread-turns.ts: the lightest deployments first, up to a budget per turn). Requests that
 * arrive in one turn are all read first, their handlers then run back to back, and their responses
 * leave together: under load the host wakes its peers once per turn instead of once per response,
 * and each side's code stays in the CPU's caches. An idle host waits one turn. Light starts share
 * an entry, and so do answers to different executions' calls: as many as the deployment's average
 * start, or answer (learnt here), fits in {@link InlinePolicy.groupSliceShare} of a slice.
 */
export class TurnQueue implements TurnRunner {
  private queued: QueuedEntry[] = [];
  /** CPU of one inline start, a moving average in nanoseconds (0: none measured yet). */
  private startCostNs = 0;
  /** CPU of one answer's entry (the handler's run up to its next call or its end), as {@link startCostNs}. */
  private answerCostNs = 0;
  /** Main-thread time of one entry of this queue (starts or an answer), a moving average (ms; 0: none yet). */
  private entryMs = 0;

  constructor(
    private readonly entries: TurnEntries,
    private readonly policy: InlinePolicy,
    /** The handler's CPU limit (ms): no start shares an entry when one slice could use it all. */
    private readonly cpuMs: number,
    private readonly turns: MainThreadTurns = MainThreadTurns.shared(),
  ) {}

  /** Queues `entry` for the end of this turn. */
  push(entry: QueuedEntry): void {
    this.queued.push(entry);
    if (this.queued.length === 1) this.turns.ready(this);
  }

  recentNs(): number {
    return this.entries.recentNs();
  }

  typicalEntryMs(): number {
    return this.entryMs;
  }

  runUntil(untilMs: number): boolean {
    do {
      const started = performance.now();
      if (this.enterNext()) {
        const took = performance.now() - started;
        this.entryMs = movingAverage(this.entryMs, took);
      }
    } while (this.queued.length > 0 && performance.now() < untilMs);
    return this.queued.length > 0;
  }

  /**
   * Enters for the entry at the head of the queue: answers (they always go in, a stale call's too
   * if its execution ended, so the code awaiting it goes on), or the starts up to the next answer;
   * several in one entry while their planned CPU fits the share of a slice. A start whose execution
   * ended meanwhile (abandoned, or its isolate stopped) is not entered, nor one that can no longer
   * go inline (it is abandoned); the starts or answers the runtime never reached in a shared entry
   * stay at the head. True when it entered the isolate.
   */
  private enterNext(): boolean {
    return (this.queued[0] as QueuedEntry).kind === "answer" ? this.enterAnswers() : this.enterStarts();
  }

  private enterStarts(): boolean {
    const size = this.groupSize(this.startCostNs);
    const group: QueuedStart[] = [];
    while (group.length < size && this.queued[0]?.kind === "start") {
      const start = this.queued.shift() as QueuedStart;
      if (this.entries.waits(start.requestId) && this.entries.mayStart(start.requestId)) group.push(start);
      else this.entries.abandon(start.requestId);
    }
    if (group.length === 0) return false;
    if (group.length === 1) {
      if (this.entries.enterStart(group[0] as QueuedStart))
        this.startCostNs = this.learnt(this.startCostNs, 1);
      return true;
    }
    const reached = this.entries.enterGroup(group);
    if (reached > 0) {
      this.startCostNs = this.learnt(this.startCostNs, reached);
      // Starts the share demotion abandoned are no longer waiting; the next entry skips them.
      this.queued.unshift(...group.slice(reached));
    }
    return true;
  }

  /**
   * Enters the answers at the head: those of different executions that may share one entry, up to
   * the planned size, together; else the first alone.
   */
  private enterAnswers(): true {
    const size = this.groupSize(this.answerCostNs);
    const group: QueuedAnswer[] = [];
    const executions = new Set<number>();
    for (const queued of this.queued) {
      if (group.length === size || queued.kind !== "answer" || executions.has(queued.requestId)) break;
      if (!this.entries.mayShareAnswer(queued.requestId)) break;
      executions.add(queued.requestId);
      group.push(queued);
    }
    if (group.length <= 1) {
      const head = this.queued.shift() as QueuedAnswer;
      if (this.entries.enterAnswer(head.requestId, head.callId, head.answer))
        this.answerCostNs = this.learnt(this.answerCostNs, 1);
      return true;
    }
    this.queued.splice(0, group.length);
    const reached = this.entries.enterAnswers(group);
    if (reached > 0) {
      this.answerCostNs = this.learnt(this.answerCostNs, reached);
      this.queued.unshift(...group.slice(reached));
    }
    return true;
  }

  /** How many inline starts, or answers, of `costNs` each (0: not known yet) the next entry takes. */
  private groupSize(costNs: number): number {
    const { sliceMs, groupSliceShare, maxGroup } = this.policy;
    if (costNs <= 0 || this.cpuMs <= sliceMs) return 1;
    const planned = Math.floor((sliceMs * 1e6 * groupSliceShare) / costNs);
    return Math.max(1, Math.min(maxGroup, planned));
  }

  /** `averageNs` with the last completed entry, which ran `count` starts or answers, folded in. */
  private learnt(averageNs: number, count: number): number {
    return movingAverage(averageNs, Number(this.entries.lastEntryNs) / Math.max(1, count));
  }
}
