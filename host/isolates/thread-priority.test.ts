import { readdirSync, readFileSync } from "node:fs";
import ivm from "isolated-vm";
import { describe, expect, it } from "vitest";
import {
  isolateThreadsLowered,
  lowerIsolateThreads,
  lowerIsolateThreadsFromNow,
  SUGGESTED_ISOLATE_NICE,
} from "./thread-priority.js";

/** Each thread's nice value (field 19 of /proc/<pid>/task/<tid>/stat, after the command's parentheses). */
function niceByThread(): Map<string, number> {
  const nice = new Map<string, number>();
  for (const id of readdirSync("/proc/self/task")) {
    const stat = readFileSync(`/proc/self/task/${id}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    nice.set(id, Number(fields[16]));
  }
  return nice;
}

describe.runIf(process.platform === "linux")("isolate threads' priority", () => {
  it("lowers threads born after the host's, and leaves the host's own", async () => {
    // Off until a host asks for it.
    lowerIsolateThreads(true);
    expect(isolateThreadsLowered()).toBe(false);
    lowerIsolateThreadsFromNow(SUGGESTED_ISOLATE_NICE);
    expect(isolateThreadsLowered()).toBe(true);
    const before = niceByThread();
    const isolate = new ivm.Isolate({ memoryLimit: 16 });
    try {
      const context = await isolate.createContext();
      const running = context.eval("let x = 0; for (let i = 0; i < 3e7; i++) x += i; x", {
        timeout: 60_000,
        promise: false,
      });
      lowerIsolateThreads(true);
      await running;
      // Threads that came after the first look (isolated-vm starts some lazily) at the next one.
      lowerIsolateThreads(true);
      const after = niceByThread();
      const born = [...after.keys()].filter((id) => !before.has(id));
      expect(born.length, "running an isolate started no thread").toBeGreaterThan(0);
      for (const id of born) expect(after.get(id)).toBe(SUGGESTED_ISOLATE_NICE);
      for (const [id, nice] of before) if (after.has(id)) expect(after.get(id)).toBe(nice);
      expect(after.get(String(process.pid))).toBe(before.get(String(process.pid)));
    } finally {
      isolate.dispose();
    }
  });
});
