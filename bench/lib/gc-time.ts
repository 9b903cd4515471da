import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";

/** Main-thread garbage collection while some work ran (ms of pauses). */
export interface GcTime {
  /** Young-generation collections (scavenges). */
  minorMs: number;
  /** Full collections and the steps of incremental marking. */
  majorMs: number;
}

/**
 * Runs `work` and adds up this process's collection pauses meanwhile, by kind. Under
 * `--single-threaded-gc` (the host's flags) every collection of the main heap runs on the main
 * thread, so the figure is CPU the host spends on its own garbage; the isolates' collections are
 * not in it. Young objects that live past two scavenges are copied twice and promoted, so a high
 * minor figure beside a server that allocates as much says something keeps request objects alive.
 */
export async function withGcTime<T extends object>(work: () => Promise<T>): Promise<T & { gc: GcTime }> {
  const gc: GcTime = { minorMs: 0, majorMs: 0 };
  const add = (entries: readonly PerformanceEntry[]) => {
    for (const entry of entries) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) gc.minorMs += entry.duration;
      else gc.majorMs += entry.duration;
    }
  };
  const observer = new PerformanceObserver((list) => add(list.getEntries()));
  observer.observe({ entryTypes: ["gc"] });
  try {
    const result = await work();
    return Object.assign(result, { gc });
  } finally {
    add(observer.takeRecords());
    observer.disconnect();
  }
}

/** One line of each server's pauses per request (µs, young generation + full), as `(a) 2.6 + 0.0`. */
export function gcPausesLine(
  servers: ReadonlyArray<readonly [string, { minorGcUs: number; majorGcUs: number }]>,
): string {
  const each = servers.map(([name, r]) => `(${name}) ${r.minorGcUs.toFixed(1)} + ${r.majorGcUs.toFixed(1)}`);
  return `main-thread GC pauses, µs per request (young generation + full): ${each.join("   ")}`;
}
