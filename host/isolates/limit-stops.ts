import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { BreachPause } from "./breach-pause.js";

/** The limits an isolate is stopped for that count against its deployment. */
export type StoppedLimit = "cpu" | "memory";

/**
 * The limit `isolate` was stopped for when `error` is that stop: memory (its own limit, or its
 * developer's share of the host's), or its CPU limit (a `timeout` that took the isolate down; one
 * at the wall-clock limit leaves it running).
 */
function limitStoppedFor(error: unknown, isolate: { isDisposed: boolean }): StoppedLimit | undefined {
  if (isPlatformError(error, "out_of_memory")) return "memory";
  return isPlatformError(error, "timeout") && isolate.isDisposed ? "cpu" : undefined;
}

/**
 * One deployment's isolates' stops for a limit, each counted once however many calls it failed.
 * A stop pauses the deployment from the second in a row ({@link BreachPause}), and holds it to the
 * breached deployments' slots for a while (see DeploymentLane.markBreached) unless it answered
 * {@link LIMITS.breachForgivenCalls} calls since its previous stop: an app with a history of
 * answers that hits a limit once by accident keeps its share, while a deployment whose calls
 * mostly end at a limit is held to the shared slots from its first stop.
 */
export class LimitStops {
  readonly pause: BreachPause;
  /** The last isolate stopped for a limit, so that its executions count one stop. */
  private lastStopped: object | null = null;
  /** Isolates whose stops count for nothing (see {@link notCounted}). */
  private readonly forgiven = new WeakSet<object>();
  /** Calls answered since the last stop for a limit (or since the deployment's runner started). */
  private answeredSinceStop = 0;

  constructor(
    deploymentId: string,
    private readonly markBreached: () => void,
    /** Told once per isolate stopped for a limit (the host's metrics count it). */
    private readonly onLimitStop: (limit: StoppedLimit) => void,
  ) {
    this.pause = new BreachPause(deploymentId);
  }

  /** A call was answered. */
  answered(): void {
    this.answeredSinceStop++;
  }

  /** A call in `isolate` failed with `error`: true when that is a stop for a limit counted just now. */
  failed(error: unknown, isolate: { isDisposed: boolean }): boolean {
    if (isolate === this.lastStopped || this.forgiven.has(isolate)) return false;
    const limit = limitStoppedFor(error, isolate);
    if (limit) this.stopped(isolate, limit);
    return limit !== undefined;
  }

  /**
   * The failures of `isolate`'s calls count as no stop: an isolate a redeploy replaced, stopped for
   * the host's memory while its calls drained (the deployment's live isolate may be stopped with
   * it, which counts; a redeploy alone breaches nothing).
   */
  notCounted(isolate: object): void {
    this.forgiven.add(isolate);
  }

  /** `isolate` was stopped for `limit` (unless it was counted already). */
  stopped(isolate: object, limit: StoppedLimit): void {
    if (isolate === this.lastStopped) return;
    this.lastStopped = isolate;
    this.pause.stopped();
    if (this.answeredSinceStop < LIMITS.breachForgivenCalls) this.markBreached();
    this.answeredSinceStop = 0;
    this.onLimitStop(limit);
  }
}
