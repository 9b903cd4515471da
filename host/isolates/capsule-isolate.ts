import { writeSync } from "node:fs";
import ivm from "isolated-vm";
import {
  type CapsuleDeclaration,
  type DispatchRequest,
  type DispatchResponse,
  decodeDispatchResponse,
  LIMITS,
} from "../../sdk/protocol/index.js";
import { type ErrorCode, isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { isPending } from "../db/index.js";
import { InlineAbandoned, type InlinePolicy, InlineStanding } from "./inline-policy.js";
import { InlineSentinel } from "./inline-sentinel.js";
import { RawJson } from "./raw-json.js";
import { loadRuntimeScript } from "./runtime-script.js";
import { SlotTable } from "./slot-table.js";

/** Resource limits of one deployment's isolate. */
export interface IsolateLimits {
  memoryMb: number;
  cpuMs: number;
  wallMs: number;
  resultBytes: number;
}

/** Defaults from {@link LIMITS}. */
export const DEFAULT_ISOLATE_LIMITS: IsolateLimits = {
  memoryMb: LIMITS.isolateMemoryMb,
  cpuMs: LIMITS.handlerCpuMs,
  wallMs: LIMITS.handlerWallMs,
  resultBytes: LIMITS.resultBytes,
};

/** A handler's answer with the CPU time it was charged. */
export type MeteredResponse = DispatchResponse & { cpuMs: number };

/**
 * Serves one syscall of the running handler; throws (or rejects) with {@link PlatformError} to fail
 * it. It answers with a value when it can at once (a point read from the snapshot, a log line), or
 * with a promise: an inline handler's ready answer goes back inside the same entry into its isolate.
 */
export type SyscallHandler = (op: string, args: unknown) => unknown;

interface RunningExecution {
  onSyscall: SyscallHandler;
  /** Set while the execution runs inline: hands over its final response. */
  finish?: (wire: string) => void;
  /** CPU charged to this execution so far, in nanoseconds. */
  cpuNs: bigint;
  /** Wall-clock deadline (ms since epoch), checked by the watchdog tick. */
  deadline: number;
  /** Fails the execution from outside (wall-clock limit). */
  fail: (error: Error) => void;
}

/** Compiled-code caches, produced by the host only (never accepted from outside). */
const codeCache = new Map<string, ivm.ExternalCopy<ArrayBuffer>>();

async function compile(
  isolate: ivm.Isolate,
  code: string,
  cacheKey: string,
  filename: string,
): Promise<ivm.Script> {
  const cachedData = codeCache.get(cacheKey);
  const script = await isolate.compileScript(
    code,
    cachedData ? { cachedData, filename } : { produceCachedData: true, filename },
  );
  const produced = (script as ivm.Script & ivm.CachedDataResult).cachedData;
  if (!cachedData && produced) codeCache.set(cacheKey, produced);
  return script;
}

function wireError(error: unknown): { code: string; message: string } {
  if (isPlatformError(error)) return { code: error.code, message: error.message };
  return { code: "internal", message: "Internal error while serving a database call." };
}

type SyscallResult = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } };

/** A syscall's answer as the JSON text the isolate parses (rows are spliced in, not re-encoded). */
function encodeSyscallResult(result: SyscallResult): string {
  if (result.ok && result.value instanceof RawJson) return `{"ok":true,"value":${result.value.json}}`;
  return JSON.stringify(result);
}

type InlineEntry = ivm.Reference<(...args: never[]) => void>;

/** A handler's start waiting for the end of the event loop's turn. */
type QueuedStart = { kind: "start"; requestId: number; payload: string };

/** An inline entry waiting for the end of the event loop's turn: a handler's start or a call's answer. */
type QueuedEntry = QueuedStart | { kind: "answer"; requestId: number; callId: number; answer: string };

/**
 * Options of an inline entry the sentinel bounds. Inline entries and calls pass only numbers and
 * strings, which cross as they are; asking for a copy would serialize each one (about 0.4 µs per
 * crossing), and anything else is refused by isolated-vm as not transferable.
 */
const PRIMITIVES_ONLY = {} as const;

const sentinel = (): InlineSentinel => InlineSentinel.shared();

const STARTUP_TIMEOUT_MS = 2000;

/**
 * What to do when V8 loses control of an isolate (for example one allocation far beyond the heap
 * limit). isolated-vm parks that isolate's thread forever, so the process must stop serving and
 * exit; `platform host` supervises its server process and starts a new one.
 */
let onCatastrophicError: (message: string) => void = (message) => {
  // Neither process.exit() nor timers work here: the main thread is stuck behind the parked
  // isolate. Write synchronously, then end the process at once.
  writeSync(
    2,
    `platform: catastrophic isolate error (${message}); stopping so the supervisor restarts the host\n`,
  );
  process.kill(process.pid, "SIGKILL");
};

/** Sets the process-wide handler for catastrophic isolate errors. */
export function setCatastrophicErrorHandler(handler: (message: string) => void): void {
  onCatastrophicError = handler;
}

/**
 * One deployment's isolate: the runtime script, the capsule bundle, and the bridge. Handlers run
 * inline on the host's main thread when {@link InlinePolicy} allows (each entry under a CPU slice
 * that the inline sentinel enforces; the entries of one turn of the event loop go in together once
 * it ends), else on the isolate's own thread with a watchdog on the isolate's CPU clock (the
 * `timeout` option of isolated-vm does not cover code that runs after an `await`). Inline and
 * threaded executions never overlap, so the main thread never waits for the isolate's thread. A
 * wall-clock timer covers both. A breach disposes the isolate; the caller gets `timeout` or
 * `out_of_memory`.
 */
export class CapsuleIsolate {
  /**
   * Executions in flight by request number; several may interleave at their awaits. Not a `Map`:
   * see {@link SlotTable} for what a long-lived one costs per request.
   */
  private readonly running = new SlotTable<RunningExecution>();
  private nextRequestId = 1;
  /** CPU clock at the last boundary the host saw, and who has been running since then. */
  private lastEventCpu = 0n;
  private runningNow: number | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private killReason: PlatformError | undefined;
  /** Executions on the isolate's own thread; inline runs wait for none of them. */
  private threadedInFlight = 0;
  /** The isolate's slot with the inline sentinel (null: it never runs inline). */
  private slot: number | null = null;
  /** Inline entries gathered in this turn of the event loop, entered together once it ends. */
  private queued: QueuedEntry[] = [];
  /**
   * While one entry runs several inline starts: the executions that finished or wait on the host
   * (the runtime starts each only after the one before did either).
   */
  private group: Set<number> | null = null;
  /** CPU of one inline start, a moving average in nanoseconds (0: none measured yet). */
  private startCostNs = 0;
  /** Synchronous entries made on the main thread so far (for diagnostics and tests). */
  private inlineEntries = 0;
  private constructor(
    private readonly isolate: ivm.Isolate,
    private readonly dispatchRef: ivm.Reference<(requestId: number | null, json: string) => Promise<string>>,
    private readonly dispatchInlineRef: InlineEntry,
    private readonly dispatchInlineManyRef: InlineEntry,
    private readonly resumeInlineRef: InlineEntry,
    readonly artifact: string,
    readonly limits: IsolateLimits,
    private readonly standing: InlineStanding,
  ) {}

  /** Creates an isolate running `code` (a capsule bundle whose content hash is `artifact`). */
  static async create(
    code: string,
    artifact: string,
    limits: IsolateLimits = DEFAULT_ISOLATE_LIMITS,
    standing: InlineStanding = new InlineStanding(),
  ): Promise<CapsuleIsolate> {
    const isolate = new ivm.Isolate({
      memoryLimit: limits.memoryMb,
      onCatastrophicError: (message) => onCatastrophicError(message),
    });
    try {
      const context = await isolate.createContext();
      let self: CapsuleIsolate | undefined;
      const bridge = new ivm.Reference(async (json: string) =>
        encodeSyscallResult(await self!.serveThreadedCall(json)),
      );
      const post = new ivm.Reference((requestId: unknown, callId: unknown, json: unknown) =>
        self?.receiveInlineCall(requestId, callId, json),
      );
      const done = new ivm.Reference((requestId: unknown, wire: unknown) =>
        self?.receiveInlineResult(requestId, wire),
      );
      await context.evalClosure(
        `globalThis.__platform_bridge = (json) => $0.apply(undefined, [json], { arguments: { copy: true }, result: { promise: true, copy: true } });
        globalThis.__platform_inline_post = (requestId, callId, json) => $1.applySync(undefined, [requestId, callId, json]);
        globalThis.__platform_inline_done = (requestId, wire) => $2.applySync(undefined, [requestId, wire]);`,
        [bridge, post, done],
      );
      const runtime = await compile(isolate, await loadRuntimeScript(), "runtime", "platform-runtime.js");
      await runtime.run(context, { timeout: STARTUP_TIMEOUT_MS });
      const entry = async (name: string) => {
        const reference = await context.global.get(name, { reference: true });
        await context.global.delete(name);
        return reference;
      };
      const dispatchRef = (await entry("__platform_dispatch")) as ivm.Reference<
        (requestId: number | null, json: string) => Promise<string>
      >;
      const dispatchInlineRef = (await entry("__platform_dispatch_inline")) as InlineEntry;
      const dispatchInlineManyRef = (await entry("__platform_dispatch_inline_many")) as InlineEntry;
      const resumeInlineRef = (await entry("__platform_resume_inline")) as InlineEntry;
      let capsule: ivm.Script;
      try {
        capsule = await compile(isolate, code, `capsule:${artifact}`, "capsule.js");
      } catch (error) {
        throw new PlatformError(
          "bad_request",
          `The capsule bundle does not compile: ${(error as Error).message}`,
        );
      }
      try {
        await capsule.run(context, { timeout: STARTUP_TIMEOUT_MS });
      } catch (error) {
        throw new PlatformError(
          "bad_request",
          `The capsule threw while loading: ${(error as Error).message}`,
        );
      }
      self = new CapsuleIsolate(
        isolate,
        dispatchRef,
        dispatchInlineRef,
        dispatchInlineManyRef,
        resumeInlineRef,
        artifact,
        limits,
        standing,
      );
      if (standing.policy.enabled) self.slot = sentinel().register(isolate, standing.policy.sliceMs);
      return self;
    } catch (error) {
      if (!isolate.isDisposed) isolate.dispose();
      if (isPlatformError(error)) throw error;
      if (isolate.isDisposed && String((error as Error).message).includes("memory")) {
        throw new PlatformError("bad_request", "The capsule ran out of memory while loading.");
      }
      throw new PlatformError("bad_request", `The capsule failed to load: ${(error as Error).message}`);
    }
  }

  get isDisposed(): boolean {
    return this.isolate.isDisposed;
  }

  /** Heap in use, for memory reports. */
  heapBytes(): number {
    const stats = this.isolate.getHeapStatisticsSync();
    return stats.used_heap_size + stats.externally_allocated_size;
  }

  /**
   * Reads a platform call and finds the execution that made it, which must be running on the
   * call's own transport (`inline` or threaded). `atBoundary` runs once the call is read, before
   * it is checked.
   */
  private callOf(
    json: unknown,
    inline: boolean,
    atBoundary: () => void,
  ): { requestId: number; op: string; args: unknown; execution: RunningExecution } {
    if (typeof json !== "string" || json.length > LIMITS.syscallBytes) {
      throw new PlatformError("bad_request", "A database call was too large.");
    }
    const call = JSON.parse(json) as { requestId?: unknown; op?: unknown; args?: unknown };
    const execution = typeof call.requestId === "number" ? this.running.get(call.requestId) : undefined;
    atBoundary();
    if (!execution || (execution.finish !== undefined) !== inline)
      throw new PlatformError("forbidden", "This call does not belong to a running handler.");
    if (typeof call.op !== "string") throw new PlatformError("bad_request", "Malformed platform call.");
    return { requestId: call.requestId as number, op: call.op, args: call.args, execution };
  }

  /**
   * Serves one platform call from the isolate's own thread. It marks CPU boundaries: the isolate
   * waits from here until the answer.
   */
  private async serveThreadedCall(json: unknown): Promise<SyscallResult> {
    try {
      const call = this.callOf(json, false, () => this.boundary(null));
      try {
        return { ok: true, value: await call.execution.onSyscall(call.op, call.args) };
      } finally {
        this.boundary(call.requestId);
      }
    } catch (error) {
      return { ok: false, error: wireError(error) };
    }
  }

  /**
   * Serves one inline platform call: its answer when ready at once, else a promise of it. No CPU
   * boundaries: the host's entry into the isolate is the boundary.
   */
  private serveInlineCall(json: unknown): SyscallResult | Promise<SyscallResult> {
    try {
      const call = this.callOf(json, true, () => {});
      const value = call.execution.onSyscall(call.op, call.args);
      if (!isPending(value)) return { ok: true, value };
      return value.then(
        (ready): SyscallResult => ({ ok: true, value: ready }),
        (error): SyscallResult => ({ ok: false, error: wireError(error) }),
      );
    } catch (error) {
      return { ok: false, error: wireError(error) };
    }
  }

  /**
   * An inline execution's platform call, posted synchronously from inside the isolate. A call the
   * host can answer at once (a point read from the snapshot, a log line) is answered right here, as
   * the result of the post: the handler goes on in the same entry. Otherwise the answer comes once
   * the host's stack has unwound, by entering again (the host never enters the isolate from inside
   * it), and the post returns nothing.
   */
  private receiveInlineCall(requestId: unknown, callId: unknown, json: unknown): string | undefined {
    if (typeof requestId !== "number" || typeof callId !== "number") return undefined;
    if (this.group) this.chargeCrossing(requestId);
    const result = this.serveInlineCall(json);
    if (!isPending(result)) return encodeSyscallResult(result);
    this.group?.add(requestId);
    void result.then((settled) =>
      this.enqueue({ kind: "answer", requestId, callId, answer: encodeSyscallResult(settled) }),
    );
    return undefined;
  }

  /**
   * Queues an inline entry until the end of this turn of the event loop (`setImmediate`), then
   * enters for every queued one in order, each entry under its own slice (light starts share one,
   * see {@link enterStarts}). Requests that arrive in one turn are all read first, their handlers
   * then run back to back, and their responses leave together: under load the host wakes its
   * peers once per turn instead of once per response, and each side's code stays in the CPU's
   * caches. An idle host waits one turn.
   */
  private enqueue(entry: QueuedEntry): void {
    this.queued.push(entry);
    if (this.queued.length === 1) setImmediate(this.enterQueued);
  }

  /**
   * Enters for the queued entries. An execution that ended meanwhile (abandoned, or its isolate
   * stopped) is not entered: an answer still goes in as a stale call's (so the code awaiting it
   * goes on), a start fails as abandoned if it is still waiting, and the caller runs it again.
   */
  private readonly enterQueued = (): void => {
    const queued = this.queued;
    this.queued = [];
    const starts: QueuedStart[] = [];
    for (const entry of queued) {
      const running = this.running.get(entry.requestId);
      if (entry.kind === "answer") {
        this.enterStarts(starts.splice(0));
        if (running?.finish)
          this.enterInline(entry.requestId, this.resumeInlineRef, [entry.callId, entry.answer]);
        else this.answerStaleCall(entry.callId, entry.answer);
      } else if (running?.finish && this.threadedInFlight === 0) {
        starts.push(entry);
      } else {
        this.abandonExecution(entry.requestId);
      }
    }
    this.enterStarts(starts);
  };

  /**
   * Enters for inline starts: several in one entry while their planned CPU (the average start so
   * far) fits {@link InlinePolicy.groupSliceShare} of a slice, else one by one. Each entry skips the
   * executions that ended meanwhile.
   */
  private enterStarts(starts: QueuedStart[]): void {
    let at = 0;
    while (at < starts.length) {
      const size = this.groupSize();
      const group = starts
        .slice(at, at + size)
        .filter(({ requestId }) => this.running.get(requestId)?.finish);
      at = Math.min(at + size, starts.length);
      if (group.length === 0 || this.isolate.isDisposed) continue;
      if (group.length === 1) {
        const [{ requestId, payload }] = group as [QueuedStart];
        const used = this.enterInline(requestId, this.dispatchInlineRef, [requestId, payload]);
        if (used !== undefined) this.learnStartCost(used, 1);
      } else {
        starts.splice(at, 0, ...this.enterGroup(group));
      }
    }
  }

  /** How many inline starts the next entry takes. */
  private groupSize(): number {
    const { sliceMs, groupSliceShare, maxGroup } = this.standing.policy;
    if (this.startCostNs <= 0 || this.limits.cpuMs <= sliceMs) return 1;
    const planned = Math.floor((sliceMs * 1e6 * groupSliceShare) / this.startCostNs);
    return Math.max(1, Math.min(maxGroup, planned));
  }

  /** Folds the CPU of an entry that ran `starts` starts into the moving average of one start. */
  private learnStartCost(usedNs: bigint, starts: number): void {
    const each = Number(usedNs) / Math.max(1, starts);
    this.startCostNs = this.startCostNs === 0 ? each : this.startCostNs * 0.8 + each * 0.2;
  }

  /**
   * One entry for several inline starts, under one slice; the runtime runs them one after another
   * (see `__platform_dispatch_inline_many`). Each crossing back to the host charges the CPU since
   * the last one to the execution that crosses. Returns the starts the runtime never reached,
   * because one before them neither finished nor waited on the host (it awaits something that never
   * settles): they go in again. An overrun demotes the deployment, as for one start.
   */
  private enterGroup(group: QueuedStart[]): QueuedStart[] {
    const args: Array<number | string> = [];
    for (const { requestId, payload } of group) args.push(requestId, payload);
    const progressed = new Set<number>();
    this.group = progressed;
    let used: bigint | undefined;
    try {
      used = this.enter(group, this.dispatchInlineManyRef, args, this.standing.policy.sliceMs, false);
    } finally {
      this.group = null;
    }
    if (used === undefined) return [];
    const stuck = group.findIndex(({ requestId }) => !progressed.has(requestId));
    const reached = stuck === -1 ? group.length : stuck + 1;
    this.learnStartCost(used, reached);
    // Starts the share demotion abandoned are gone from `running`; enterStarts skips them.
    return group.slice(reached);
  }

  /** In an entry for several starts: the CPU since the last crossing goes to the one crossing now. */
  private chargeCrossing(requestId: number): void {
    this.runningNow = requestId;
    this.boundary(requestId);
  }

  /**
   * Answers a call that no running inline execution made (a `ctx` kept from an execution that has
   * ended; the answer is an error), so the code awaiting it continues. On the main thread under a
   * slice, unless executions are running on the isolate's thread: then through the thread.
   */
  private answerStaleCall(callId: number, answer: string): void {
    if (this.isolate.isDisposed) return;
    const args = [callId, answer] as never[];
    if (this.threadedInFlight > 0) {
      this.resumeInlineRef
        .apply(undefined, args, { arguments: { copy: true }, timeout: this.limits.cpuMs })
        .catch(() => {});
      return;
    }
    try {
      this.applyInline(this.resumeInlineRef, args, this.standing.policy.sliceMs);
    } catch {
      this.demote();
      if (this.stoppedBySentinel()) this.dispose();
    }
  }

  /**
   * One synchronous entry on the main thread; throws as applySync. Bounded by the inline sentinel
   * once it watches this isolate, else by isolated-vm's `timeout` (`timeoutMs`, wall time), and
   * watched by the inline watchdog in case V8 parks the thread.
   */
  private applyInline(entry: InlineEntry, args: unknown[], timeoutMs: number): void {
    this.inlineEntries++;
    const watcher = sentinel();
    // Inline runs need the policy enabled, so the isolate has a slot; -1 never names one.
    const slot = this.slot ?? -1;
    const watched = watcher.watches(slot);
    watcher.open(slot);
    try {
      entry.applySync(undefined, args as never[], watched ? PRIMITIVES_ONLY : { timeout: timeoutMs });
    } finally {
      watcher.close();
    }
  }

  /** True (once) when the inline sentinel stopped this isolate for overrunning a slice. */
  private stoppedBySentinel(): boolean {
    return this.slot !== null && sentinel().stopped(this.slot);
  }

  /** An inline execution's final response, handed over synchronously from inside the isolate. */
  private receiveInlineResult(requestId: unknown, wire: unknown): void {
    if (typeof requestId !== "number" || typeof wire !== "string") return;
    if (this.group) {
      this.chargeCrossing(requestId);
      this.group.add(requestId);
    }
    this.running.get(requestId)?.finish?.(wire);
  }

  /** How many synchronous entries into this isolate the host has made on its main thread. */
  get entries(): number {
    return this.inlineEntries;
  }

  /** True when a new execution may run inline now. */
  mayRunInline(): boolean {
    return this.threadedInFlight === 0 && this.standing.allowed;
  }

  /**
   * Enters the isolate synchronously for inline execution `requestId` (its start, or the answer to
   * one of its calls), under a slice, or under what is left of the handler's CPU limit when that is
   * less. See {@link enter}.
   */
  private enterInline(requestId: number, entry: InlineEntry, args: unknown[]): bigint | undefined {
    const execution = this.running.get(requestId);
    if (!execution?.finish || this.isolate.isDisposed) return undefined;
    const sliceMs = this.standing.policy.sliceMs;
    const leftMs = this.limits.cpuMs - Number(execution.cpuNs) / 1e6;
    return this.enter(requestId, entry, args, Math.max(1, Math.min(sliceMs, leftMs)), leftMs <= sliceMs);
  }

  /**
   * One synchronous entry for inline execution `who`, or for a group of starts (whose CPU the
   * crossings charge, see {@link enterGroup}). Overrunning the slice demotes the deployment (the
   * sentinel's stop also disposed the isolate; the runner starts a fresh one), unless
   * `breachesLimit`: the execution had no more CPU left than the slice, so it breached the
   * handler's limit. Under isolated-vm's `timeout`, which counts wall time, an entry stopped while
   * it used little CPU (the host was descheduled) abandons only its own executions. Returns the CPU
   * the entry used (undefined when it did not complete).
   */
  private enter(
    who: number | readonly QueuedStart[],
    entry: InlineEntry,
    args: unknown[],
    timeoutMs: number,
    breachesLimit: boolean,
  ): bigint | undefined {
    this.boundary(typeof who === "number" ? who : null);
    const before = this.lastEventCpu;
    try {
      this.applyInline(entry, args, timeoutMs);
    } catch (error) {
      this.boundary(null);
      if (this.stoppedBySentinel()) {
        if (breachesLimit) this.kill("timeout", this.cpuLimitMessage());
        else this.demote();
        this.dispose();
      } else if (
        !String((error as Error)?.message ?? error).includes("timed out") ||
        breachesLimit ||
        this.isolate.isDisposed
      ) {
        this.abandonInline(this.failure(error));
      } else if (this.lastEventCpu - before >= BigInt(this.standing.policy.sliceMs) * 500_000n) {
        this.demote();
      } else if (typeof who === "number") {
        this.abandonExecution(who);
      } else {
        for (const { requestId } of who) this.abandonExecution(requestId);
      }
      return undefined;
    }
    this.boundary(null);
    const used = this.lastEventCpu - before;
    if (this.standing.charge(used)) this.abandonInline(new InlineAbandoned());
    return used;
  }

  /** Fails inline execution `requestId` as abandoned, if it still waits: its caller runs it again. */
  private abandonExecution(requestId: number): void {
    const execution = this.running.get(requestId);
    if (!execution?.finish) return;
    this.running.delete(requestId);
    execution.fail(new InlineAbandoned());
  }

  /** Moves the deployment to its own thread for the cool-down; inline executions run again there. */
  private demote(): void {
    this.standing.demote();
    this.abandonInline(new InlineAbandoned());
  }

  /** Fails every inline execution in flight with `reason`; none of them is entered again. */
  private abandonInline(reason: Error): void {
    this.running.forEach((execution, requestId) => {
      if (!execution.finish) return;
      this.running.delete(requestId);
      execution.fail(reason);
    });
  }

  /** Asks the capsule for its declaration (schema, handler names, endpoints, auth). */
  async declare(): Promise<CapsuleDeclaration> {
    const response = await this.execute({ kind: "declare" }, async () => {
      throw new PlatformError("forbidden", "No database access while declaring.");
    });
    if (!response.ok)
      throw new PlatformError("bad_request", `The capsule declaration failed: ${response.error.message}`);
    return JSON.parse(response.valueJson) as CapsuleDeclaration;
  }

  private kill(code: ErrorCode, message: string): void {
    this.killReason ??= new PlatformError(code, message);
    this.disposeIsolate();
    this.abandonInline(this.killReason);
  }

  private cpuLimitMessage(): string {
    return `The handler used more than ${this.limits.cpuMs} ms of CPU time and was stopped.`;
  }

  /** Disposes the V8 isolate (if it is not already) and stops the sentinel watching it. */
  private disposeIsolate(): void {
    if (!this.isolate.isDisposed) this.isolate.dispose();
    if (this.slot !== null) sentinel().unregister(this.slot);
  }

  /**
   * Charges the CPU used since the last boundary to whoever was running, then records who runs
   * next (`null`: the isolate is waiting on the host). Boundaries are the start and end of each
   * execution and each platform call, the only points where user code stops or resumes.
   */
  private boundary(next: number | null): void {
    const now = this.isolate.isDisposed ? this.lastEventCpu : this.isolate.cpuTime;
    const ran = this.runningNow === null ? undefined : this.running.get(this.runningNow);
    if (ran) ran.cpuNs += now - this.lastEventCpu;
    this.lastEventCpu = now;
    this.runningNow = next;
  }

  /** The watchdog tick: CPU of whoever is running, and every execution's wall-clock deadline. */
  private checkLimits(): void {
    if (this.running.size === 0 && this.watchdog) {
      // Stopped on its first idle tick, not after each execution: calls come and go in microseconds.
      clearInterval(this.watchdog);
      this.watchdog = null;
      return;
    }
    const now = Date.now();
    this.running.forEach((execution) => {
      if (now > execution.deadline) {
        execution.deadline = Number.POSITIVE_INFINITY;
        execution.fail(
          new PlatformError(
            "timeout",
            `The handler did not finish within ${this.limits.wallMs} ms and was stopped.`,
          ),
        );
      }
    });
    if (this.isolate.isDisposed) return;
    const pending = this.isolate.cpuTime - this.lastEventCpu;
    const ran = this.runningNow === null ? undefined : this.running.get(this.runningNow);
    if ((ran?.cpuNs ?? 0n) + pending > BigInt(this.limits.cpuMs) * 1_000_000n) {
      this.kill("timeout", this.cpuLimitMessage());
    }
  }

  /** Number of executions in flight. */
  get inFlight(): number {
    return this.running.size;
  }

  /**
   * Runs one dispatch request. Several may be in flight; each is charged the CPU it uses (checked
   * by a watchdog on the isolate's CPU clock, since isolated-vm's `timeout` does not cover code after
   * an `await`). A CPU or memory breach disposes the isolate and fails what was running in it with
   * `timeout` / `out_of_memory`; a handler that never finishes fails alone at the wall-clock limit.
   * Handler errors resolve as `{ ok: false }` responses.
   */
  async execute(request: DispatchRequest, onSyscall: SyscallHandler): Promise<MeteredResponse> {
    if (this.isolate.isDisposed)
      throw new PlatformError("unavailable", "The deployment's isolate was stopped; retry.");
    const requestId = this.nextRequestId++;
    const execution: RunningExecution = {
      onSyscall,
      cpuNs: 0n,
      deadline: Date.now() + this.limits.wallMs,
      fail: () => {},
    };
    const inline = request.kind !== "declare" && this.mayRunInline();
    this.running.set(requestId, execution);
    if (!inline) this.threadedInFlight++;
    this.watchdog ??= setInterval(() => this.checkLimits(), 5);
    try {
      // The execution's number travels beside the request (the runtime puts it in), not spliced in.
      const payload = JSON.stringify(request);
      const wire = await new Promise<unknown>((resolve, reject) => {
        execution.fail = reject;
        if (inline) {
          execution.finish = resolve;
          this.enqueue({ kind: "start", requestId, payload });
          return;
        }
        this.boundary(requestId);
        this.dispatchRef
          .apply(undefined, [request.kind === "declare" ? null : requestId, payload], {
            arguments: { copy: true },
            result: { promise: true, copy: true },
            timeout: this.limits.cpuMs,
          })
          .then((value) => {
            this.boundary(null);
            resolve(value);
          }, reject);
      });
      const cpuMs = Number(execution.cpuNs) / 1e6;
      if (typeof wire !== "string")
        throw new PlatformError("internal", "The isolate answered with something other than JSON.");
      if (wire.length > this.limits.resultBytes + 1) {
        return {
          ok: false,
          error: {
            code: "limit_exceeded",
            message: `The handler's result is larger than ${this.limits.resultBytes} bytes.`,
          },
          cpuMs,
        };
      }
      const response = decodeDispatchResponse(wire) as MeteredResponse;
      response.cpuMs = cpuMs;
      return response;
    } catch (error) {
      if (error instanceof InlineAbandoned) throw error;
      if (isPlatformError(error, "timeout") && !this.killReason) throw error;
      throw this.failure(error);
    } finally {
      this.running.delete(requestId);
      if (!inline) this.threadedInFlight--;
    }
  }

  private failure(error: unknown): PlatformError {
    if (this.killReason) return this.killReason;
    const message = String((error as Error)?.message ?? error);
    if (message.includes("memory limit")) {
      this.killReason = new PlatformError(
        "out_of_memory",
        `The handler exceeded the ${this.limits.memoryMb} MiB memory limit and was stopped.`,
      );
    } else if (message.includes("timed out")) {
      this.kill("timeout", this.cpuLimitMessage());
    } else {
      this.kill("internal", "The deployment's isolate failed and was restarted.");
    }
    this.disposeIsolate();
    return this.killReason as PlatformError;
  }

  /** Frees the isolate. Safe to call twice. */
  dispose(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    this.disposeIsolate();
    this.abandonInline(new PlatformError("unavailable", "The deployment's isolate was stopped; retry."));
  }
}
