import type ivm from "isolated-vm";
import { describe, expect, it } from "vitest";
import { CpuMeter } from "./cpu-meter.js";
import { SlotTable } from "./inline/slot-table.js";
import type { RunningExecution, Transport } from "./transport.js";

const MS = 1_000_000n;

/** A meter over an isolate whose clock the test moves, with one inline execution (id 1) running. */
function inlineMeter() {
  const isolate = { isDisposed: false, cpuTime: 0n };
  const running = new SlotTable<RunningExecution>();
  const inlineExecution = () =>
    ({ transport: { ownThread: false } as Transport, cpuNs: 0n }) as RunningExecution;
  const execution = inlineExecution();
  running.set(1, execution);
  const meter = new CpuMeter(isolate as unknown as ivm.Isolate, running);
  /** One entry of execution 1 that isolated-vm times at `figureNs`; returns what it is charged. */
  const entry = (figureNs: bigint, cpuSinceStart: () => number | undefined): bigint => {
    const entryStart = meter.beginInlineEntry(1);
    isolate.cpuTime += figureNs;
    return meter.endInlineEntry(entryStart, cpuSinceStart);
  };
  return { isolate, running, inlineExecution, execution, meter, entry };
}

describe("the CPU an inline entry is charged", () => {
  it("is the main thread's own CPU when the isolate's figure counts time the thread was held", () => {
    const { execution, entry } = inlineMeter();
    // 80 ms by isolated-vm's figure, of which the main thread was on a core 5 ms (it waited for
    // the kernel's memory-map lock the rest).
    expect(entry(80n * MS, () => Number(5n * MS))).toBe(5n * MS);
    expect(execution.cpuNs).toBe(5n * MS);
  });

  it("is the isolate's figure when the main thread's CPU is not less, or cannot be read", () => {
    const { execution, entry } = inlineMeter();
    expect(entry(10n * MS, () => Number(12n * MS))).toBe(10n * MS);
    expect(entry(10n * MS, () => undefined)).toBe(10n * MS);
    expect(execution.cpuNs).toBe(20n * MS);
  });

  it("does not read the main thread's CPU for a short entry", () => {
    const { execution, entry } = inlineMeter();
    let read = false;
    const charged = entry(300_000n, () => {
      read = true;
      return 0;
    });
    expect(read).toBe(false);
    expect(charged).toBe(300_000n);
    expect(execution.cpuNs).toBe(300_000n);
  });

  it("spreads the discount over every stretch of a group entry, in proportion", () => {
    const { isolate, running, inlineExecution, execution, meter } = inlineMeter();
    const other = inlineExecution();
    running.set(2, other);
    // One entry for a row of starts: execution 1 handed back to the host after 30 ms (the host
    // was held in that stretch), execution 2 after 8 ms more, and ran on 2 ms to the entry's end;
    // the main thread used 4 ms in all. Each is charged a tenth of its stretches' figures, so the
    // wait is not charged to whichever execution happened to run when the host was held.
    const entryStart = meter.beginInlineEntry(1);
    isolate.cpuTime += 30n * MS;
    meter.boundary(2);
    isolate.cpuTime += 10n * MS;
    expect(meter.endInlineEntry(entryStart, () => Number(4n * MS))).toBe(4n * MS);
    expect(execution.cpuNs).toBe(3n * MS);
    expect(other.cpuNs).toBe(1n * MS);
    // The next entry is not discounted for this one's stretches.
    expect(meter.endInlineEntry(meter.beginInlineEntry(1), () => 0)).toBe(0n);
    expect(execution.cpuNs).toBe(3n * MS);
  });
});

describe("the shared clock of isolates' threads", () => {
  /** A meter whose shared clock counts its readings and runs at half the isolate's figure. */
  function countedMeter() {
    const isolate = { isDisposed: false, cpuTime: 0n };
    const running = new SlotTable<RunningExecution>();
    let readings = 0;
    const meter = new CpuMeter(isolate as unknown as ivm.Isolate, running, 1000, () => {
      readings++;
      return isolate.cpuTime / 2n;
    });
    const execution = (ownThread: boolean) =>
      ({ transport: { ownThread } as Transport, cpuNs: 0n }) as RunningExecution;
    return { isolate, running, meter, execution, readings: () => readings };
  }

  it("is not read at an idle isolate's boundary, such as the end of an inline call", () => {
    const { isolate, running, meter, execution, readings } = countedMeter();
    running.set(1, execution(false));
    meter.endInlineEntry(meter.beginInlineEntry(1), () => undefined);
    isolate.cpuTime += 3n * MS;
    meter.endInlineEntry(meter.beginInlineEntry(1), () => undefined);
    running.delete(1);
    // A reading may take a sample of every isolate thread's figures: nothing ran to be charged.
    meter.catchUp();
    expect(readings()).toBe(0);
  });

  it("is read when a stretch on the isolate's own thread starts, ends, or ran for nobody", () => {
    const { isolate, running, meter, execution, readings } = countedMeter();
    const threaded = execution(true);
    running.set(1, threaded);
    meter.boundary(1);
    expect(readings()).toBe(1);
    isolate.cpuTime += 4n * MS;
    meter.boundary(null);
    expect(readings()).toBe(2);
    expect(threaded.cpuNs).toBe(2n * MS);
    // Stray CPU on the isolate's thread, charged to nobody but the isolate's budget.
    isolate.cpuTime += 2n * MS;
    meter.catchUp();
    expect(readings()).toBe(3);
  });
});
