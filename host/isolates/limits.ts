import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

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

/**
 * Why an isolate was stopped. Every reason is decided by the host's own code (its CPU watchdog,
 * the inline sentinel, a dispose, a broken answer), except `memory`: isolated-vm disposes an
 * isolate by itself only when it reaches its memory limit, so an isolate found disposed that the
 * host did not stop ran out of memory. The executions in flight fail with {@link stopError}.
 * `host-memory`: the host's isolates together were past their budget with nothing idle left to
 * evict, and this one's developer held more than an even share (see heap-enforcement.ts).
 */
export type StopReason = "cpu" | "budget" | "memory" | "host-memory" | "stopped" | "failed";

/** The error every execution in flight gets when its isolate is stopped for `reason`. */
export function stopError(reason: StopReason, limits: IsolateLimits): PlatformError {
  switch (reason) {
    case "cpu":
      return new PlatformError(
        "timeout",
        `The handler used more than ${limits.cpuMs} ms of CPU time and was stopped.`,
      );
    case "budget":
      return new PlatformError(
        "timeout",
        `The deployment's code used more CPU than its calls in flight may (${limits.cpuMs} ms each; code a handler left running counts too), and its isolate was stopped.`,
      );
    case "memory":
      return new PlatformError(
        "out_of_memory",
        `The handler exceeded the ${limits.memoryMb} MiB memory limit and was stopped.`,
      );
    case "host-memory":
      return new PlatformError(
        "out_of_memory",
        "The host ran short of memory for isolates while this developer's deployments held more than an even share of it, and this deployment's isolate was stopped. Keep less state between calls, or retry later.",
      );
    case "stopped":
      return new PlatformError("unavailable", "The deployment's isolate was stopped; retry.");
    case "failed":
      return new PlatformError("internal", "The deployment's isolate failed and was restarted.");
  }
}

/**
 * The error of one execution that outlived the wall-clock limit (its isolate goes on); `waiting`
 * when it was waiting for platform calls it made (the database or storage not answering).
 */
export function wallLimitError(limits: IsolateLimits, waiting = false): PlatformError {
  return new PlatformError(
    "timeout",
    waiting
      ? `The handler did not finish within ${limits.wallMs} ms and was stopped while it waited for the database or another platform call it made (busy, or not answering). Retry later.`
      : `The handler did not finish within ${limits.wallMs} ms and was stopped.`,
  );
}
