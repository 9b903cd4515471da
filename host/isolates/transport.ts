import { type DispatchResponse, LIMITS, PlatformError } from "../../sdk/protocol/index.js";
import { isPending } from "../db/index.js";

/**
 * Serves one syscall of the running handler; throws (or rejects) with a `PlatformError` to fail
 * it. It answers with a value when it can at once (a point read from the snapshot, a log line), or
 * with a promise: an inline handler's ready answer goes back inside the same entry into its isolate.
 */
export type SyscallHandler = (op: string, args: unknown) => unknown;

/** A response with what its execution cost: CPU, and whether it ran on the isolate's own thread. */
export type MeteredResponse = DispatchResponse & { cpuMs: number; onOwnThread: boolean };

/** One handler execution in flight in an isolate, as its isolate and its transport see it. */
export interface RunningExecution {
  onSyscall: SyscallHandler;
  /** The transport the execution runs on; its platform calls must arrive through it. */
  transport: Transport;
  /** Hands over the runtime's final response (the dispatch wire text). */
  finish: (wire: unknown) => void;
  /** Fails the execution from outside (a limit, a stop, an abandoned inline run). */
  fail: (error: Error) => void;
  /** CPU charged to this execution so far, in nanoseconds. */
  cpuNs: bigint;
  /** Wall-clock deadline (ms since epoch), checked by the isolate's watchdog tick. */
  deadline: number;
  /** The handler it runs (kind and name), as the inline standing keys it; none for the declaration. */
  handler: string | undefined;
  /** Its platform calls not answered yet: one stopped at the wall-clock limit while waiting on them says so. */
  waitingCalls: number;
  /** Its platform calls so far (see {@link LIMITS.platformCallsPerHandler}). */
  calls: number;
  /** True once it has handed over its response: a call made for it after that is refused. */
  answered: boolean;
}

/**
 * `execution`'s own syscall handler, counting in its {@link RunningExecution.waitingCalls}, and
 * failing the execution at any call past {@link LIMITS.platformCallsPerHandler} (a handler that
 * catches the error gets no further).
 */
export function countingWaits(execution: RunningExecution): SyscallHandler {
  const onSyscall = execution.onSyscall;
  const answered = () => {
    execution.waitingCalls--;
  };
  return (op, args) => {
    if (++execution.calls > LIMITS.platformCallsPerHandler) {
      const error = new PlatformError(
        "limit_exceeded",
        `A handler may make at most ${LIMITS.platformCallsPerHandler} platform calls (database calls and log lines); this one made more. Read and write in fewer, larger calls.`,
      );
      execution.fail(error);
      throw error;
    }
    const value = onSyscall(op, args);
    if (isPending(value)) {
      execution.waitingCalls++;
      value.then(answered, answered);
    }
    return value;
  };
}

/**
 * How handler executions travel into an isolate and how their platform calls come back: on the
 * isolate's own thread (threaded-transport.ts) or synchronously on the host's main thread
 * (inline/transport.ts). The isolate picks one per execution; an execution stays on it.
 */
export interface Transport {
  /**
   * True when user code runs on the isolate's own thread, whose waits for a core are left out of
   * its CPU (isolate-cpu-clock.ts); false inline, on the host's main thread.
   */
  readonly ownThread: boolean;
  /**
   * Starts execution `requestId` of the request `payload` (JSON). It settles later through the
   * execution's `finish` or `fail`, never by throwing here.
   */
  start(requestId: number, payload: string, execution: RunningExecution): void;
  /** The execution has left the isolate's table (answered or failed). */
  ended(): void;
}
