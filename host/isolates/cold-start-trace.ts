/**
 * The steps of a cold start, in the order they end (the benchmark prints how long each takes):
 * `artifact`; without a spare isolate, `isolate`, `context` (with the runtime's compile, queued
 * beside it), `runtime` (the bridge and the runtime's top level) and `entries`; then the
 * capsule's `compile` and `run`.
 */
export type ColdStartPhase = "artifact" | "isolate" | "context" | "runtime" | "entries" | "compile" | "run";

type Listener = (phase: ColdStartPhase, ms: number) => void;

let listener: Listener | null = null;

const untimed = (): void => {};

/**
 * Tells `next` how long each phase of every cold start from now on takes (null: nobody). Only the
 * benchmark listens: it is what shows where a cold start's time goes before anyone optimises it.
 */
export function traceColdStarts(next: Listener | null): void {
  listener = next;
}

/** A stopwatch for one cold start: each call reports the time since the previous one. */
export function coldStartLaps(): (phase: ColdStartPhase) => void {
  const report = listener;
  if (!report) return untimed;
  let last = performance.now();
  return (phase) => {
    const now = performance.now();
    report(phase, now - last);
    last = now;
  };
}
