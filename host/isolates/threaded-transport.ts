import type { CpuMeter } from "./cpu-meter.js";
import type { SlotTable } from "./inline/slot-table.js";
import type { ThreadedEntry } from "./isolate-loader.js";
import { callerOf, encodeSyscallResult, readCall, wireError } from "./syscall-wire.js";
import { lookForIsolateThreads } from "./thread-priority.js";
import type { RunningExecution, Transport } from "./transport.js";

/**
 * Executions on the isolate's own thread: the host starts one with an async `Reference.apply` of
 * the runtime's dispatcher, and each platform call comes back as an async call of the bridge
 * reference (JSON strings both ways). The main thread never waits for the isolate's thread. CPU is
 * charged at the start and end of the execution and around each platform call.
 */
export class ThreadedTransport implements Transport {
  readonly ownThread = true;
  /** Executions running on the thread now; inline runs wait for none of them (see inline/transport.ts). */
  inFlight = 0;

  constructor(
    private readonly dispatch: ThreadedEntry,
    private readonly running: SlotTable<RunningExecution>,
    private readonly meter: CpuMeter,
    /**
     * isolated-vm's `timeout` (wall time, ms) for the synchronous part of a start: a backstop only
     * (the handler's wall limit), as the isolate's CPU watchdog covers every part and, unlike it,
     * does not charge a thread its waits for a core.
     */
    private readonly timeoutMs: number,
  ) {}

  start(requestId: number, payload: string, execution: RunningExecution): void {
    this.inFlight++;
    this.meter.boundary(requestId);
    this.dispatch
      .apply(undefined, [requestId, payload], {
        arguments: { copy: true },
        result: { promise: true, copy: true },
        timeout: this.timeoutMs,
      })
      .then((wire) => {
        this.meter.boundary(null);
        execution.finish(wire);
      }, execution.fail);
    // The isolate's thread exists now: a new one runs below the main thread from its first turn.
    lookForIsolateThreads();
  }

  ended(): void {
    this.inFlight--;
  }

  /**
   * Serves one platform call from the isolate's thread. The isolate waits from here until the
   * answer, so the call is a CPU boundary at both ends (a refused call too).
   */
  async serveCall(json: unknown): Promise<string> {
    try {
      const call = readCall(json, this.running);
      this.meter.boundary(null);
      const execution = callerOf(call, this);
      try {
        return encodeSyscallResult({
          ok: true,
          value: await execution.onSyscall(call.op as string, call.args),
        });
      } finally {
        this.meter.boundary(call.requestId as number);
      }
    } catch (error) {
      return encodeSyscallResult({ ok: false, error: wireError(error) });
    }
  }
}
