import ivm from "isolated-vm";

/**
 * How long after an isolate was stopped while running its teardown may still hold isolated-vm's
 * allocator lock. Freeing a heap of the memory limit takes hundreds of milliseconds on a busy
 * machine; this leaves a wide margin, and costs only a little CPU per isolate created meanwhile.
 */
const TEARDOWN_WINDOW_MS = 10_000;

const PROBE_SOURCE = "() => { new ivm.Isolate({ memoryLimit: 8 }).dispose(); }";

/**
 * Keeps the host's main thread from waiting behind another isolate's teardown.
 *
 * isolated-vm holds one process-wide lock while it frees an isolate and while it allocates one,
 * and `new ivm.Isolate()` is synchronous. An isolate stopped while running (at its memory or CPU
 * limit) is freed on its own thread; if the main thread creates an isolate meanwhile, every tenant
 * waits until that heap is freed (400-700 ms for a 128-256 MiB heap, measured with bare isolates,
 * several dying at once). So in the window after such a stop, {@link beforeCreate} first creates
 * and frees a tiny isolate on a helper isolate's thread: when that returns, the lock was free, and
 * the main thread's own creation just after it does not wait. The isolate itself cannot be made on
 * the helper's thread: isolated-vm runs its crash handler only in the isolate that passed it, and
 * a handler in a non-default isolate crashes the process.
 */
export class TeardownGate {
  private windowEnds = 0;
  private probe: ivm.Reference<() => void> | null = null;
  private inFlight: Promise<void> | null = null;

  /** An isolate was stopped while running: its heap is being freed off the main thread. */
  noteTeardown(): void {
    this.windowEnds = Date.now() + TEARDOWN_WINDOW_MS;
  }

  /**
   * Resolves when creating an isolate on the main thread will not wait for a teardown: at once
   * outside the window, else once a probe made on the helper's thread got the lock. Concurrent
   * callers share one probe.
   */
  beforeCreate(): Promise<void> | undefined {
    if (Date.now() >= this.windowEnds) return undefined;
    this.inFlight ??= this.runProbe().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async runProbe(): Promise<void> {
    this.probe ??= await makeProbe();
    await this.probe.apply(undefined, []);
  }
}

async function makeProbe(): Promise<ivm.Reference<() => void>> {
  const helper = new ivm.Isolate({ memoryLimit: 8 });
  const context = await helper.createContext();
  await context.global.set("ivm", ivm);
  return (await context.eval(PROBE_SOURCE, { reference: true })) as ivm.Reference<() => void>;
}

/** The process's gate: the allocator lock is process-wide, so every host in it shares one. */
export const teardownGate = new TeardownGate();
