import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/**
 * Pauses a deployment whose isolate keeps being stopped for its CPU or memory limit. Each stop
 * costs the host a core for up to the CPU limit or a heap grown to the memory limit (and the
 * garbage collection that goes with it), then a fresh isolate: a tenant that did nothing else could
 * take a share of the machine from everyone. The first stop is free (a handler can be unlucky
 * once); a stop within {@link LIMITS.breachPauseMaxMs} of the previous one refuses the deployment's
 * calls for a pause that doubles each time, so a handler that always breaches costs less and less.
 */
export class BreachPause {
  /** Stops in a row, each within the longest pause of the previous one. */
  private stops = 0;
  private lastStopAt = 0;
  /** Calls are refused before this time (ms since epoch); 0 when not paused. */
  private pausedUntil = 0;

  constructor(private readonly deploymentId: string) {}

  /** Throws `503 unavailable` with `Retry-After` while the deployment is paused. */
  check(): void {
    if (this.pausedUntil === 0) return;
    const waitMs = this.pausedUntil - Date.now();
    if (waitMs <= 0) {
      this.pausedUntil = 0;
      return;
    }
    const seconds = Math.ceil(waitMs / 1000);
    throw new PlatformError(
      "unavailable",
      `Deployment ${this.deploymentId} is paused: its isolate was stopped ${this.stops} times in a row for exceeding its CPU or memory limit (or, for memory, its developer's share of the host's). Retry in ${seconds} s.`,
      { retryAfterSeconds: seconds },
    );
  }

  /** Records that the deployment's isolate was stopped for a limit, pausing it from the second time. */
  stopped(): void {
    const now = Date.now();
    this.stops = now - this.lastStopAt < LIMITS.breachPauseMaxMs ? this.stops + 1 : 1;
    this.lastStopAt = now;
    if (this.stops < 2) return;
    const pauseMs = Math.min(LIMITS.breachPauseMaxMs, LIMITS.breachPauseMs * 2 ** (this.stops - 2));
    this.pausedUntil = now + pauseMs;
  }
}
