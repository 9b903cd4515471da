/**
 * This process's threads and their nice values, for the tests of isolates' threads' priority
 * (host/isolates/thread-priority.ts). Linux only: it reads `/proc/self/task`.
 */
import { readdirSync, readFileSync } from "node:fs";
import ivm from "isolated-vm";
import { lookForIsolateThreads } from "../../host/isolates/thread-priority.js";

/** Each thread's nice value (field 19 of /proc/<pid>/task/<tid>/stat, after the command's parentheses). */
export function niceByThread(): Map<string, number> {
  const nice = new Map<string, number>();
  for (const id of readdirSync("/proc/self/task")) {
    const stat = readFileSync(`/proc/self/task/${id}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    nice.set(id, Number(fields[16]));
  }
  return nice;
}

/**
 * Runs a loop in a new isolate on its own thread, looking for isolates' threads while it runs and
 * after (isolated-vm starts some lazily), and returns every thread's nice value afterwards.
 */
export async function niceAfterAnIsolateRan(): Promise<Map<string, number>> {
  const isolate = new ivm.Isolate({ memoryLimit: 16 });
  try {
    const context = await isolate.createContext();
    const running = context.eval("let x = 0; for (let i = 0; i < 3e7; i++) x += i; x", {
      timeout: 60_000,
      promise: false,
    });
    lookForIsolateThreads(true);
    await running;
    lookForIsolateThreads(true);
    return niceByThread();
  } finally {
    isolate.dispose();
  }
}
