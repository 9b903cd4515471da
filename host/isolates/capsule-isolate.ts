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
import { RawJson } from "./raw-json.js";
import { loadRuntimeScript } from "./runtime-script.js";

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

/** Serves one syscall of the running handler; throws {@link PlatformError} to fail it. */
export type SyscallHandler = (op: string, args: unknown) => Promise<unknown>;

interface RunningExecution {
  onSyscall: SyscallHandler;
  /** CPU charged to this execution so far, in nanoseconds. */
  cpuNs: bigint;
  /** Wall-clock deadline (ms since epoch), checked by the watchdog tick. */
  deadline: number;
  /** Fails the execution from outside (wall-clock limit). */
  fail: (error: PlatformError) => void;
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
 * One deployment's isolate: the runtime script, the capsule bundle, and the one bridge function.
 * Runs one handler at a time (callers queue), with a watchdog on the isolate's CPU clock (the
 * `timeout` option of isolated-vm does not cover code that runs after an `await`) and a wall-clock
 * timer. A breach disposes the isolate; the caller gets `timeout` or `out_of_memory`.
 */
export class CapsuleIsolate {
  /** Executions in flight; several may interleave at their awaits. */
  private readonly running = new Map<number, RunningExecution>();
  private nextRequestId = 1;
  /** CPU clock at the last boundary the host saw, and who has been running since then. */
  private lastEventCpu = 0n;
  private runningNow: number | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private killReason: PlatformError | undefined;
  private constructor(
    private readonly isolate: ivm.Isolate,
    private readonly dispatchRef: ivm.Reference<(json: string) => Promise<string>>,
    readonly artifact: string,
    readonly limits: IsolateLimits,
  ) {}

  /** Creates an isolate running `code` (a capsule bundle whose content hash is `artifact`). */
  static async create(
    code: string,
    artifact: string,
    limits: IsolateLimits = DEFAULT_ISOLATE_LIMITS,
  ): Promise<CapsuleIsolate> {
    const isolate = new ivm.Isolate({
      memoryLimit: limits.memoryMb,
      onCatastrophicError: (message) => onCatastrophicError(message),
    });
    try {
      const context = await isolate.createContext();
      let self: CapsuleIsolate | undefined;
      const bridge = new ivm.Reference(async (json: string) => {
        const response = await self!.serveSyscall(json);
        if (response.ok && response.value instanceof RawJson)
          return `{"ok":true,"value":${response.value.json}}`;
        return JSON.stringify(response);
      });
      await context.evalClosure(
        "globalThis.__platform_bridge = (json) => $0.apply(undefined, [json], { arguments: { copy: true }, result: { promise: true, copy: true } });",
        [bridge],
      );
      const runtime = await compile(isolate, await loadRuntimeScript(), "runtime", "platform-runtime.js");
      await runtime.run(context, { timeout: STARTUP_TIMEOUT_MS });
      const dispatchRef = (await context.global.get("__platform_dispatch", {
        reference: true,
      })) as ivm.Reference<(json: string) => Promise<string>>;
      await context.global.delete("__platform_dispatch");
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
      self = new CapsuleIsolate(isolate, dispatchRef, artifact, limits);
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

  private async serveSyscall(
    json: string,
  ): Promise<{ ok: true; value: unknown } | { ok: false; error: { code: string; message: string } }> {
    try {
      if (typeof json !== "string" || json.length > LIMITS.syscallBytes) {
        throw new PlatformError("bad_request", "A database call was too large.");
      }
      const call = JSON.parse(json) as { requestId?: unknown; op?: unknown; args?: unknown };
      const execution = typeof call.requestId === "number" ? this.running.get(call.requestId) : undefined;
      this.boundary(null);
      if (!execution) throw new PlatformError("forbidden", "This call does not belong to a running handler.");
      if (typeof call.op !== "string") throw new PlatformError("bad_request", "Malformed platform call.");
      try {
        return { ok: true, value: await execution.onSyscall(call.op, call.args) };
      } finally {
        this.boundary(call.requestId as number);
      }
    } catch (error) {
      return { ok: false, error: wireError(error) };
    }
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
    if (!this.isolate.isDisposed) this.isolate.dispose();
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
    const now = Date.now();
    for (const execution of this.running.values()) {
      if (now > execution.deadline) {
        execution.deadline = Number.POSITIVE_INFINITY;
        execution.fail(
          new PlatformError(
            "timeout",
            `The handler did not finish within ${this.limits.wallMs} ms and was stopped.`,
          ),
        );
      }
    }
    if (this.isolate.isDisposed) return;
    const pending = this.isolate.cpuTime - this.lastEventCpu;
    const ran = this.runningNow === null ? undefined : this.running.get(this.runningNow);
    if ((ran?.cpuNs ?? 0n) + pending > BigInt(this.limits.cpuMs) * 1_000_000n) {
      this.kill("timeout", `The handler used more than ${this.limits.cpuMs} ms of CPU time and was stopped.`);
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
    this.running.set(requestId, execution);
    this.watchdog ??= setInterval(() => this.checkLimits(), 5);
    try {
      const payload = JSON.stringify(request.kind === "declare" ? request : { ...request, requestId });
      this.boundary(requestId);
      const wire = await new Promise<unknown>((resolve, reject) => {
        execution.fail = reject;
        this.dispatchRef
          .apply(undefined, [payload], {
            arguments: { copy: true },
            result: { promise: true, copy: true },
            timeout: this.limits.cpuMs,
          })
          .then(resolve, reject);
      });
      this.boundary(null);
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
      return { ...decodeDispatchResponse(wire), cpuMs };
    } catch (error) {
      if (isPlatformError(error, "timeout") && !this.killReason) throw error;
      throw this.failure(error);
    } finally {
      this.running.delete(requestId);
      if (this.running.size === 0 && this.watchdog) {
        clearInterval(this.watchdog);
        this.watchdog = null;
      }
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
      this.kill("timeout", `The handler used more than ${this.limits.cpuMs} ms of CPU time and was stopped.`);
    } else {
      this.kill("internal", "The deployment's isolate failed and was restarted.");
    }
    if (!this.isolate.isDisposed) this.isolate.dispose();
    return this.killReason as PlatformError;
  }

  /** Frees the isolate. Safe to call twice. */
  dispose(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }
}
