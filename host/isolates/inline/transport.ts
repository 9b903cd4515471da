import { type CrossingText, wrapText } from "../../../sdk/protocol/index.js";
import { isPending } from "../../db/index.js";
import type { InlineEntry, RuntimeEntries } from "../isolate-loader.js";
import { encodeSyscallResult, serveCall } from "../syscall-wire.js";
import type { RunningExecution, Transport } from "../transport.js";
import { InlineAbandoned } from "./abandoned.js";
import { abandonAll, entryFailed } from "./entry-failure.js";
import type { InlineHost } from "./inline-host.js";
import type { InlineStanding } from "./policy.js";
import { InlineRow } from "./row.js";
import { InlineSentinel } from "./sentinel.js";
import { threadCpuNs, threadCpuSince } from "./thread-cpu.js";
import { type QueuedAnswer, type QueuedStart, type TurnEntries, TurnQueue } from "./turn-queue.js";

const sentinel = (): InlineSentinel => InlineSentinel.shared();

/**
 * Executions on the host's main thread (see policy.ts for when): the host enters the isolate
 * synchronously to start a handler and to hand it each platform call's answer, and the isolate
 * posts its calls and its result back synchronously. Entries wait for the end of their turn of the
 * event loop (turn-queue.ts); each runs under a CPU slice the sentinel enforces (sentinel.ts), or
 * under what is left of the handler's CPU limit when that is less. Inline and threaded executions
 * never overlap, so the main thread never waits for the isolate's thread.
 */
export class InlineTransport implements Transport, TurnEntries {
  readonly ownThread = false;
  /** Synchronous entries made on the main thread so far (for diagnostics and tests). */
  entries = 0;
  lastEntryNs = 0n;
  private readonly queue: TurnQueue;
  /** The isolate's slot with the inline sentinel. */
  private readonly slot: number;
  /** While one entry goes through several starts or answers: whose turn it is. */
  private row: InlineRow | null = null;

  constructor(
    private readonly host: InlineHost,
    private readonly runtime: RuntimeEntries,
    private readonly standing: InlineStanding,
  ) {
    this.queue = new TurnQueue(this, standing.policy, host.limits.cpuMs);
    this.slot = sentinel().register(host.isolate, standing.policy.sliceMs);
  }

  /** True when a new execution (of `handler`, when given: see `handlerKey`) may run inline now. */
  mayRun(handler?: string): boolean {
    const light = handler === undefined || !this.standing.heavy(handler);
    return this.host.threaded.inFlight === 0 && this.standing.allowed && light;
  }

  start(requestId: number, payload: string): void {
    this.queue.push({ kind: "start", requestId, payload });
  }

  ended(): void {}

  /** Stops the sentinel watching the isolate (it is gone). */
  unregister(): void {
    sentinel().unregister(this.slot);
  }

  /** True (once) when the sentinel stopped this isolate for overrunning a slice. */
  stoppedBySentinel(): boolean {
    return sentinel().stopped(this.slot);
  }

  waits(requestId: number): boolean {
    return this.host.running.get(requestId)?.transport === this;
  }

  /** As {@link mayRun} for the execution's handler, which may have turned heavy since it queued. */
  mayStart(requestId: number): boolean {
    return this.mayRun(this.host.running.get(requestId)?.handler);
  }

  recentNs(): number {
    return this.standing.recentNs;
  }

  enterStart({ requestId, payload }: QueuedStart): boolean {
    return this.enterFor(requestId, this.runtime.dispatchInline, [requestId, wrapText(payload)]);
  }

  /**
   * One entry for several starts, under one slice; the runtime runs them one after another (see
   * `inARow` in runtime/index.ts). The starts after the first that neither finished nor waited on
   * the host (it awaits something that never settles) were never reached.
   */
  enterGroup(group: QueuedStart[]): number {
    const args: Array<number | CrossingText> = [];
    for (const { requestId, payload } of group) args.push(requestId, wrapText(payload));
    return this.enterShared(group, this.runtime.dispatchInlineMany, args);
  }

  enterAnswer(requestId: number, callId: number, answer: string): boolean {
    if (this.waits(requestId))
      return this.enterFor(requestId, this.runtime.resumeInline, [callId, wrapText(answer)]);
    this.answerStaleCall(callId, answer);
    return false;
  }

  /**
   * An answer may share an entry when its execution waits for it and has more than a slice of its
   * CPU limit left: a shared entry runs under one slice, which then cannot take any execution in
   * it past its limit.
   */
  mayShareAnswer(requestId: number): boolean {
    const execution = this.host.running.get(requestId);
    if (execution?.transport !== this) return false;
    return this.cpuLeftMs(execution) > this.standing.policy.sliceMs;
  }

  /** What is left of the handler's CPU limit to `execution` (ms; below 0 once past it). */
  private cpuLeftMs(execution: RunningExecution): number {
    return this.host.limits.cpuMs - Number(execution.cpuNs) / 1e6;
  }

  /** One entry for several answers, one execution each, handed over in a row as {@link enterGroup}'s starts. */
  enterAnswers(group: QueuedAnswer[]): number {
    const args: Array<number | CrossingText> = [];
    for (const { requestId, callId, answer } of group) args.push(requestId, callId, wrapText(answer));
    return this.enterShared(group, this.runtime.resumeInlineMany, args);
  }

  /**
   * Enters `entry` for `group` under one slice; how many of the group the runtime reached (0: the
   * entry did not complete). Each execution is charged its turn (see row.ts): from when the runtime
   * begins it to when the runtime begins the next, the last one's to the end of the entry.
   */
  private enterShared(group: readonly { requestId: number }[], entry: InlineEntry, args: unknown[]): number {
    if (this.host.isolate.isDisposed) return 0;
    const row = new InlineRow(group.map(({ requestId }) => requestId));
    this.row = row;
    let completed: boolean;
    try {
      completed = this.enter(row.members, entry, args, this.standing.policy.sliceMs, false);
    } finally {
      this.row = null;
    }
    return completed ? row.reached : 0;
  }

  /** In a shared entry, the runtime begins `requestId`'s turn: the CPU from here on is its own. */
  receiveTurn(requestId: unknown): void {
    if (typeof requestId === "number" && this.row?.began(requestId)) this.host.meter.boundary(requestId);
  }

  abandon(requestId: number): void {
    const execution = this.host.running.get(requestId);
    if (execution?.transport !== this) return;
    this.host.running.delete(requestId);
    execution.fail(new InlineAbandoned());
  }

  /**
   * An inline execution's platform call, posted synchronously from inside the isolate. A call the
   * host can answer at once (a point read from the snapshot, a log line) is answered right here, as
   * the result of the post: the handler goes on in the same entry. Otherwise the answer comes once
   * the host's stack has unwound, by entering again (the host never enters the isolate from inside
   * it), and the post returns nothing.
   */
  receiveCall(requestId: unknown, callId: unknown, json: unknown): CrossingText | undefined {
    if (typeof requestId !== "number" || typeof callId !== "number") return undefined;
    const result = serveCall(json, this.host.running, this, requestId);
    if (!isPending(result)) return wrapText(encodeSyscallResult(result));
    void result.then((settled) =>
      this.queue.push({ kind: "answer", requestId, callId, answer: encodeSyscallResult(settled) }),
    );
    return undefined;
  }

  /** An inline execution's final response, handed over synchronously from inside the isolate. */
  receiveResult(requestId: unknown, wire: unknown): void {
    if (typeof requestId !== "number" || typeof wire !== "string") return;
    const next = this.row?.answered(requestId);
    if (next !== undefined) this.host.meter.boundary(next);
    const execution = this.host.running.get(requestId);
    if (execution?.transport === this) execution.finish(wire);
  }

  /**
   * Enters for inline execution `requestId` (its start, or the answer to one of its calls) under a
   * slice, or under what is left of the handler's CPU limit when that is less: an overrun then
   * breaches the limit. True when the entry completed.
   */
  private enterFor(requestId: number, entry: InlineEntry, args: unknown[]): boolean {
    const execution = this.host.running.get(requestId);
    if (execution?.transport !== this || this.host.isolate.isDisposed) return false;
    const sliceMs = this.standing.policy.sliceMs;
    const leftMs = this.cpuLeftMs(execution);
    if (leftMs <= 0) {
      // Its last entry took it past its limit without overrunning the slice the sentinel watches.
      this.host.stop("cpu");
      return false;
    }
    return this.enter(requestId, entry, args, Math.max(1, Math.min(sliceMs, leftMs)), leftMs <= sliceMs);
  }

  /**
   * One synchronous entry for inline execution `who`, or for a row of starts or answers (see
   * {@link enterShared}). An entry that used more than its share of the main thread demotes the
   * deployment. True when the entry completed; see entryFailed (entry-failure.ts) otherwise.
   */
  private enter(
    who: number | readonly number[],
    entry: InlineEntry,
    args: unknown[],
    timeoutMs: number,
    breachesLimit: boolean,
  ): boolean {
    const meter = this.host.meter;
    const before = meter.beginInlineEntry(typeof who === "number" ? who : (who[0] ?? null));
    const cpuBefore = threadCpuNs();
    const cpuSinceStart = () => threadCpuSince(cpuBefore);
    try {
      this.applyInline(entry, args, timeoutMs, cpuBefore);
    } catch {
      const usedNs = meter.endInlineEntry(before, cpuSinceStart);
      entryFailed(this.host, this.standing, this, this.slot, who, breachesLimit, usedNs);
      return false;
    }
    this.lastEntryNs = meter.endInlineEntry(before, cpuSinceStart);
    if (this.standing.charge(this.lastEntryNs)) abandonAll(this.host, this, new InlineAbandoned());
    return true;
  }

  /**
   * Answers a call that no running inline execution made (a `ctx` kept from an execution that has
   * ended; the answer is an error), so the code awaiting it continues. On the main thread under a
   * slice, as an entry of the deployment's, unless executions are running on the isolate's thread:
   * then through the thread.
   */
  private answerStaleCall(callId: number, answer: string): void {
    if (this.host.isolate.isDisposed) return;
    const args = [callId, wrapText(answer)] as never[];
    if (this.host.threaded.inFlight > 0) {
      this.runtime.resumeInline
        .apply(undefined, args, { arguments: { copy: true }, timeout: this.host.limits.cpuMs })
        .catch(() => {});
      return;
    }
    // No execution is charged; the deployment's share of the main thread is.
    this.enter([], this.runtime.resumeInline, args, this.standing.policy.sliceMs, false);
  }

  /** One synchronous entry on the main thread, watched by the sentinel; throws as applySync. */
  private applyInline(entry: InlineEntry, args: unknown[], timeoutMs: number, startCpuNs?: number): void {
    this.entries++;
    sentinel().enter(this.slot, entry, args, timeoutMs, startCpuNs);
  }
}
