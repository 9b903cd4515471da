/**
 * What the isolate pool reports as it happens, for the host's metrics. An interface of this layer
 * (the metrics implement it), so isolates import nothing above them; the default ignores it all.
 */
export interface IsolateObserver {
  /** An isolate went live: a cold start, a restart after a stop, or an adopted deploy probe. */
  isolateStarted(): void;
  /** A live isolate was dropped: idle too long, or beyond the cap on live isolates. */
  isolateEvicted(reason: "idle" | "capacity" | "memory"): void;
  /** `deployment`'s isolate was stopped for its CPU or memory limit (once per isolate). */
  limitBreached(deployment: string, limit: "cpu" | "memory"): void;
}

/** Reports nowhere. */
export const IGNORE_ISOLATES: IsolateObserver = {
  isolateStarted() {},
  isolateEvicted() {},
  limitBreached() {},
};
