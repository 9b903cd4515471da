import { readdirSync, readlinkSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { closeSchedstat, closeSchedstatsBut, readSchedstat } from "./schedstat-files.js";

const threads = () => new Set(readdirSync("/proc/self/task"));
const openFiles = () =>
  readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).endsWith("/schedstat");
    } catch {
      return false;
    }
  }).length;

describe.runIf(process.platform === "linux")("a thread's schedstat figures", () => {
  it("are read again from the file kept open, and a thread's time on a core never goes back", () => {
    const main = String(process.pid);
    const first = readSchedstat(main);
    const second = readSchedstat(main);
    expect(first).toBeDefined();
    expect(second?.[0]).toBeGreaterThanOrEqual(first?.[0] ?? Number.POSITIVE_INFINITY);
    expect(openFiles()).toBe(1);
    closeSchedstat(main);
    expect(openFiles()).toBe(0);
  });

  it("are undefined, with the file closed, once the thread ended", async () => {
    const before = threads();
    const worker = new Worker("setInterval(() => {}, 1000)", { eval: true });
    await new Promise((resolve) => worker.once("online", resolve));
    const born = [...threads()].filter((id) => !before.has(id));
    expect(born.length).toBeGreaterThan(0);
    for (const id of born) expect(readSchedstat(id)).toBeDefined();
    await worker.terminate();
    // The worker's own thread ends (others it started may linger): wait for it, however slowly.
    let gone: string[] = [];
    while (gone.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gone = born.filter((id) => !threads().has(id));
    }
    for (const id of gone) expect(readSchedstat(id)).toBeUndefined();
    expect(openFiles()).toBe(born.length - gone.length);
    closeSchedstatsBut(new Set());
    expect(openFiles()).toBe(0);
    expect(readSchedstat("no-such-thread")).toBeUndefined();
    expect(openFiles()).toBe(0);
  });
});
