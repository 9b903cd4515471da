import { type CrossingText, wrapText } from "../../sdk/protocol/index.js";
import type { CpuMeter } from "./cpu-meter.js";
import type { SlotTable } from "./inline/slot-table.js";
import type { ThreadedEntry } from "./isolate-loader.js";
import { callerOf, encodeSyscallResult, notRunningError, readCall, wireError } from "./syscall-wire.js";
import type { ThreadLane } from "./thread-lane.js";
import { lookForIsolateThreads } from "./thread-priority.js";
import type { RunningExecution, Transport } from "./transport.js";

/**
 * Executions on the isolate's own thread: the host starts one with an async `Reference.apply` of
 * the runtime's dispatcher, and each platform call comes back as an async call of the bridge
 * reference (JSON strings both ways). The main thread never waits for the isolate's thread. Both
 * the start and each answer are handed over through the isolate's lane, while it holds one of the
 * host's run tokens (thread-tokens.ts). CPU is charged from each hand-over to the next platform
 * call or the end of the execution.
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
    private readonly lane: ThreadLane,
    /**
     * Called as an answer goes back to the isolate's thread: the code it resumes may be one whose
     * call already ended, which the watchdog must watch too (see CpuBudget).
     */
    private readonly resuming: () => void,
  ) {}

  start(requestId: number, payload: string, execution: RunningExecution): void {
    this.inFlight++;
    this.lane.post(() => {
      // Failed (at its wall limit, or its isolate stopped) while it waited for a token.
      if (this.running.get(requestId) !== execution) return false;
      this.meter.boundary(requestId);
      this.dispatch
        .apply(undefined, [requestId, wrapText(payload)], {
          arguments: { copy: true },
          result: { promise: true, copy: true },
          timeout: this.timeoutMs,
        })
        .then(
          (wire) => {
            this.meter.boundary(null);
            this.lane.yielded();
            execution.finish(wire);
          },
          (error: Error) => {
            this.lane.yielded();
            execution.fail(error);
          },
        );
      // The isolate's thread exists now: a new one runs below the main thread from its first turn.
      lookForIsolateThreads();
    });
  }

  ended(): void {
    this.inFlight--;
  }

  /** The isolate is gone: what waited for a run token goes to it (it drops it) and the token goes back. */
  close(): void {
    this.lane.close();
  }

  /**
   * Serves one platform call from the isolate's thread: a CPU boundary at both ends. The isolate
   * posts a call without stopping, and may go on running its caller's code (a call it did not
   * await: a log line) or other work queued meanwhile: that is charged to nobody until the next
   * boundary, and bounded by the isolate's budget (see CpuBudget).
   */
  async serveCall(json: unknown): Promise<CrossingText> {
    let answer: string | undefined;
    let execution: RunningExecution | undefined;
    let caller: number | null = null;
    let op: unknown;
    let args: unknown;
    try {
      const call = readCall(json, this.running);
      execution = callerOf(call, this);
      caller = call.requestId as number;
      op = call.op;
      args = call.args;
    } catch (error) {
      answer = encodeSyscallResult({ ok: false, error: wireError(error) });
    }
    this.meter.boundary(null);
    this.lane.yielded();
    if (execution !== undefined) {
      try {
        answer = encodeSyscallResult({ ok: true, value: await execution.onSyscall(op as string, args) });
      } catch (error) {
        answer = encodeSyscallResult({ ok: false, error: wireError(error) });
      }
      // Failed meanwhile (its wall limit, a slow database): its code is not resumed with a result
      // to go on with, only to unwind, which its budget, cut as it ended, allows.
      if (this.running.get(caller as number) !== execution) {
        answer = encodeSyscallResult({ ok: false, error: wireError(notRunningError()) });
        caller = null;
      }
    }
    await this.handOver();
    if (caller !== null) this.meter.boundary(caller);
    this.resuming();
    return wrapText(answer as string);
  }

  /** Resolves once the isolate's lane holds a run token: the answer returned next goes to its thread. */
  private handOver(): Promise<void> {
    return new Promise((resolve) => this.lane.post(resolve));
  }
}
