import type ivm from "isolated-vm";
import type { CapsuleDeclaration, DispatchRequest } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { CpuMeter } from "./cpu-meter.js";
import { nameCrashSubject, type Tenant } from "./crash-subjects.js";
import { parseDeclaration } from "./declaration-text.js";
import {
  InlineAbandoned,
  type InlineHost,
  InlineSentinel,
  InlineStanding,
  InlineTransport,
  SlotTable,
} from "./inline/index.js";
import { type LoadedCapsule, type LoadFrom, loadIsolate, type RuntimeEntries } from "./isolate-loader.js";
import { IsolateWatchdog } from "./isolate-watchdog.js";
import { DEFAULT_ISOLATE_LIMITS, type IsolateLimits, type StopReason, stopError } from "./limits.js";
import { readRuntimeAnswer } from "./runtime-answer.js";
import { teardownGate } from "./teardown-gate.js";
import { ThreadTokens } from "./thread-tokens.js";
import { ThreadedTransport } from "./threaded-transport.js";
import {
  countingWaits,
  type MeteredResponse,
  type RunningExecution,
  type SyscallHandler,
  type Transport,
} from "./transport.js";

const noop = (): void => {};

const refuseSyscalls: SyscallHandler = async () => {
  throw new PlatformError("forbidden", "No database access while declaring.");
};

/**
 * One deployment's isolate: its lifecycle, its limits and its CPU meter. Each execution runs on one
 * of two transports: inline on the host's main thread when the deployment's {@link InlineStanding}
 * allows it (inline/transport.ts), else on the isolate's own thread (threaded-transport.ts). A
 * watchdog on the isolate's CPU clock covers both (isolated-vm's `timeout` does not cover code that
 * runs after an `await`), as does a wall-clock deadline per execution. A breach stops the isolate,
 * and what ran in it fails with the {@link StopReason}'s error; the runner starts a fresh one.
 */
export class CapsuleIsolate implements InlineHost {
  /**
   * Executions in flight by request number; several may interleave at their awaits. Not a `Map`:
   * see {@link SlotTable} for what a long-lived one costs per request.
   */
  readonly running = new SlotTable<RunningExecution>();
  readonly meter: CpuMeter;
  readonly threaded: ThreadedTransport;
  /** Null when the deployment never runs inline (the policy is disabled). */
  private readonly inline: InlineTransport | null;
  private nextRequestId = 1;
  private readonly watchdog: IsolateWatchdog;
  /**
   * Told when the isolate was stopped for its CPU budget (see CpuBudget) while none of its calls
   * was in flight: no call fails for it, so its keeper counts the breach from here.
   */
  onStrayStop: () => void = noop;
  /** Why the isolate was stopped; the first reason stands. */
  private stopReason: StopReason | undefined;

  private constructor(
    readonly isolate: ivm.Isolate,
    runtime: RuntimeEntries,
    private readonly refreshCaches: LoadedCapsule["refreshCaches"],
    readonly artifact: string,
    readonly limits: IsolateLimits,
    private readonly standing: InlineStanding,
  ) {
    this.meter = new CpuMeter(isolate, this.running, limits.cpuMs);
    this.watchdog = new IsolateWatchdog({
      isolate,
      running: this.running,
      meter: this.meter,
      limits,
      lost: () => this.stop(this.lostReason()),
      overran: (budget, stray) => {
        this.stop(budget ? "budget" : "cpu");
        if (stray) this.onStrayStop();
      },
    });
    const lane = ThreadTokens.shared().lane(isolate);
    this.threaded = new ThreadedTransport(
      runtime.dispatch,
      this.running,
      this.meter,
      limits.wallMs,
      lane,
      () => this.watchdog.watch(),
    );
    this.inline = standing.policy.enabled ? new InlineTransport(this, runtime, standing) : null;
  }

  /**
   * Creates an isolate running `code` (a capsule bundle whose content hash is `artifact`), compiled
   * through `from.cache` (see loadIsolate; none shared when not given), in `from.blank` when given
   * (made with the same limits), for the deployment `from.scope` and `from.tenant` when known
   * (see loadIsolate).
   */
  static async create(
    code: string,
    artifact: string,
    limits: IsolateLimits = DEFAULT_ISOLATE_LIMITS,
    standing: InlineStanding = new InlineStanding(),
    from: LoadFrom = {},
  ): Promise<CapsuleIsolate> {
    const loaded = await loadIsolate(code, artifact, limits, from);
    const self = new CapsuleIsolate(
      loaded.isolate,
      loaded.entries,
      loaded.refreshCaches,
      artifact,
      limits,
      standing,
    );
    loaded.connect(self.threaded, self.inline);
    return self;
  }

  get isDisposed(): boolean {
    return this.isolate.isDisposed;
  }

  /**
   * Names whom this isolate runs code for from now on, in crash reports: a deploy's isolate once
   * it serves its deployment, or the deployment's owner once it changed (a claim).
   */
  serveFor(tenant: Tenant): void {
    if (nameCrashSubject(this.isolate, this.artifact, tenant)) InlineSentinel.shared().renamed(this.isolate);
  }

  /** How many synchronous entries into this isolate the host has made on its main thread. */
  get entries(): number {
    return this.inline?.entries ?? 0;
  }

  /** True when a new execution may run inline now. */
  mayRunInline(): boolean {
    return this.inline?.mayRun() ?? false;
  }

  /** Asks the capsule for its declaration (schema, handler names, endpoints, auth). */
  async declare(): Promise<CapsuleDeclaration> {
    const response = await this.execute({ kind: "declare" }, refuseSyscalls);
    if (!response.ok)
      throw new PlatformError("bad_request", `The capsule declaration failed: ${response.error.message}`);
    return parseDeclaration(response.valueJson);
  }

  /**
   * Runs one dispatch request. Several may be in flight; each is charged the CPU it uses. A CPU or
   * memory breach stops the isolate and fails what was running in it with `timeout` /
   * `out_of_memory`; a handler that never finishes fails alone at the wall-clock limit. Handler
   * errors resolve as `{ ok: false }` responses. An inline run the isolate abandoned rejects with
   * {@link InlineAbandoned}: the caller runs it again in a fresh transaction (see retryAbandoned).
   */
  async execute(request: DispatchRequest, onSyscall: SyscallHandler): Promise<MeteredResponse> {
    if (this.isolate.isDisposed) throw stopError("stopped", this.limits);
    const requestId = this.nextRequestId++;
    const inline = this.inline;
    const handler = handlerKey(request);
    const transport: Transport =
      inline !== null && handler !== undefined && inline.mayRun(handler) ? inline : this.threaded;
    // The execution's number travels beside the request (the runtime puts it in), not spliced in.
    const payload = JSON.stringify(request);
    const execution: RunningExecution = {
      onSyscall,
      transport,
      finish: noop,
      fail: noop,
      cpuNs: 0n,
      deadline: Date.now() + this.limits.wallMs,
      handler,
      waitingCalls: 0,
      calls: 0,
      answered: false,
    };
    execution.onSyscall = countingWaits(execution);
    this.running.set(requestId, execution);
    this.meter.budget.granted();
    this.watchdog.watch();
    let wire: unknown;
    try {
      wire = await new Promise<unknown>((resolve, reject) => {
        execution.finish = (answer) => {
          execution.answered = true;
          resolve(answer);
        };
        execution.fail = reject;
        transport.start(requestId, payload, execution);
      });
    } catch (error) {
      if (error instanceof InlineAbandoned || isPlatformError(error)) throw error;
      // The host fails executions with platform errors; only the threaded start rejects with
      // isolated-vm's: the isolate is gone, or (the runtime's dispatcher never throws) the start's
      // synchronous part overran the `timeout` it carries, the wall limit (the CPU watchdog stops
      // a loop long before it unless the isolate's thread hardly ran).
      throw this.stop(this.isolate.isDisposed ? this.lostReason() : "cpu");
    } finally {
      this.meter.catchUp();
      this.running.delete(requestId);
      const unused = execution.answered ? 0n : BigInt(this.limits.cpuMs) * 1_000_000n - execution.cpuNs;
      this.meter.budget.ended(this.running.size, unused);
      transport.ended();
    }
    if (handler !== undefined) this.standing.noteExecution(handler, execution.cpuNs);
    return this.response(wire, execution.cpuNs, transport.ownThread);
  }

  /** Bytes the isolate's heap holds now, garbage not yet collected included (asked on its thread). */
  async heapBytes(): Promise<number> {
    return heldBytes(await this.isolate.getHeapStatistics());
  }

  /** {@link heapBytes}, read at once on the calling thread (it waits for the isolate's lock). */
  heapBytesSync(): number {
    return heldBytes(this.isolate.getHeapStatisticsSync());
  }

  /** The runtime's answer as a response; an answer the runtime could not have given stops the isolate. */
  private response(wire: unknown, cpuNs: bigint, onOwnThread: boolean): MeteredResponse {
    const response = readRuntimeAnswer(wire, this.limits.resultBytes) as MeteredResponse | undefined;
    if (response === undefined) throw this.stop("failed");
    response.cpuMs = Number(cpuNs) / 1e6;
    response.onOwnThread = onOwnThread;
    return response;
  }

  /**
   * Why the isolate is gone when the host did not stop it: the inline sentinel stopped it (it
   * records that), or else isolated-vm did at the memory limit, the only time it disposes an
   * isolate by itself.
   */
  private lostReason(): StopReason {
    return this.inline?.stoppedBySentinel() ? "stopped" : "memory";
  }

  /**
   * Stops the isolate for `reason` (the first reason given stands), frees it, and fails every
   * execution in flight with the reason's error, which it returns.
   */
  stop(reason: StopReason): PlatformError {
    // Stopped mid-run, its heap is freed on its own thread, which may hold up isolates created now.
    if (this.stopReason === undefined && (this.running.size > 0 || reason === "memory")) {
      teardownGate.noteTeardown();
    }
    this.stopReason ??= reason;
    if (!this.isolate.isDisposed) this.isolate.dispose();
    this.inline?.unregister();
    const error = stopError(this.stopReason, this.limits);
    this.running.forEach((execution, requestId) => {
      this.running.delete(requestId);
      execution.fail(error);
    });
    this.threaded.close();
    return error;
  }

  /**
   * Frees an idle isolate (an eviction), after it has refreshed its deployment's code cache from
   * what it ran so the next cold start compiles less; `code` gives the capsule's code (read only
   * if needed). Resolves once the isolate is freed.
   */
  retire(code: () => Promise<string>): Promise<void> {
    if (this.isDisposed || this.running.size > 0) {
      this.dispose();
      return Promise.resolve();
    }
    return this.refreshCaches(code)
      .catch(() => {})
      .finally(() => this.dispose());
  }

  /** Frees the isolate; what still runs in it fails as `unavailable`. Safe to call twice. */
  dispose(): void {
    this.watchdog.stop();
    this.stop("stopped");
  }
}

/** What a heap holds: its objects (garbage not yet collected included) and its external memory. */
function heldBytes(stats: ivm.HeapStatistics): number {
  return stats.used_heap_size + stats.externally_allocated_size;
}

/** The handler `request` runs, as a deployment's inline standing keys it; none for the declaration. */
function handlerKey(request: DispatchRequest): string | undefined {
  if (request.kind === "declare") return undefined;
  return "name" in request ? `${request.kind}:${request.name}` : request.kind;
}
