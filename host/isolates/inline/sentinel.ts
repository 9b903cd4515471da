import ivm from "isolated-vm";
import { anyWrapped } from "../../../sdk/protocol/index.js";
import { bundleOf, type InlineEntry } from "../isolate-loader.js";
import { threadCpuNs } from "./thread-cpu.js";
import { nameInlineSlot, watchInlineEntries } from "./watchdog.js";

/** Cells of the state the host and the sentinel share (an Int32Array over a SharedArrayBuffer). */
const SEQ = 0; // inline entries opened so far
const OPEN = 1; // slot of the isolate the host is inside now; 0: none
const GENERATION = 2; // the host's registry generation (bumped on every change)
const WATCHING = 3; // the generation the sentinel is watching now; -1: none
const STOPPED = 4; // slot of the isolate the sentinel stopped last; 0: none
const CPU_SEQ = 5; // the entry the watchdog thread measured the main thread's CPU in; CPU_UNMEASURED: it cannot
const CPU_US = 6; // the main thread's CPU in that entry so far (µs), as the watchdog thread measured it
const START_CPU_US = 7; // the main thread's CPU when the open entry began (µs, modulo 2^31); -1: not read
const ASLEEP = 8; // 1 while no registered isolate may run entries (spares alone): the sentinel does not tick
const TICKS = 9; // the sentinel's ticks so far (modulo 2^32)
const SIGNAL = 10; // bumped by every change of the registry or of ASLEEP: what the sentinel sleeps on
const CELLS = 11;
/** {@link CPU_SEQ} until the watchdog thread found it can read the main thread's CPU. */
const CPU_UNMEASURED = -2;
/**
 * Past this many slices on the steady clock an entry is stopped even if the main thread's CPU in it
 * is still under a slice: the machine held the host that long, and the entry is not let off for good.
 */
const STEADY_CAP_SLICES = 5;

/**
 * Options of an inline entry the sentinel bounds. Inline entries and calls pass only numbers and
 * strings, which cross as they are; asking for a copy would serialize each one (about 0.4 µs per
 * crossing), and anything else is refused by isolated-vm as not transferable.
 */
const PRIMITIVES_ONLY = {} as const;
/** Options of an entry whose arguments hold a long string wrapped (sdk/protocol/crossing-text.ts). */
const COPIED = { arguments: { copy: true } } as const;

/**
 * Runs in the sentinel's own isolate, on an isolated-vm thread: every tick it looks at the entry
 * the host is in, and stops (disposes) an isolate whose one entry has used more CPU than its slice
 * since the sentinel first saw it. isolated-vm measures the stretch an isolate is running now on a
 * steady clock (finished stretches on the thread's CPU clock), which counts the time the machine
 * did not let the host run. Stopping such a light entry cost a fresh isolate and a demotion, and
 * under 20 busy tenants the fresh isolate waited for the kernel's memory-map lock. So an entry
 * over its slice on the steady clock is stopped only once the main thread's own CPU in it, which
 * the inline watchdog thread reads from the kernel (watchdog.ts), is over the slice too, or once
 * it is {@link STEADY_CAP_SLICES} slices long on the steady clock. Where the kernel's figure cannot
 * be read, the steady clock decides alone. An entry whose main-thread CPU passes the slice is
 * stopped too while the isolate's own is under it: the host's work for the calls an entry has
 * answered at once (gets, writes, kept scans) runs inside it, outside the isolate's clock.
 * While {@link ASLEEP} is set it sleeps instead of ticking, on {@link SIGNAL} as it read it before
 * looking at the generation and the cell: a wait that checks its value first, so no change the
 * host makes after that reading is missed. Returns when the host changes the registry.
 */
const WATCH_SOURCE = `(function watch(buffer, entries, generation, tickMs) {
  const state = new Int32Array(buffer);
  const targets = new Map(entries.map(([slot, isolate, sliceMs]) => [slot, { isolate, cpuNs: BigInt(sliceMs) * 1000000n }]));
  Atomics.store(state, ${WATCHING}, generation);
  let seen = -1;
  let since = 0n;
  for (;;) {
    const signal = Atomics.load(state, ${SIGNAL});
    if (Atomics.load(state, ${GENERATION}) !== generation) break;
    if (Atomics.load(state, ${ASLEEP}) === 1) {
      Atomics.wait(state, ${SIGNAL}, signal);
      seen = -1;
      continue;
    }
    Atomics.wait(state, ${GENERATION}, generation, tickMs);
    Atomics.add(state, ${TICKS}, 1);
    const slot = Atomics.load(state, ${OPEN});
    const seq = Atomics.load(state, ${SEQ});
    const target = targets.get(slot);
    if (!target) { seen = -1; continue; }
    let cpu;
    try { cpu = target.isolate.cpuTime; } catch { seen = -1; continue; }
    if (seq !== seen) { seen = seq; since = cpu; continue; }
    const measured = Atomics.load(state, ${CPU_SEQ});
    // The main thread's CPU in the entry: the isolate's, and the host's for the calls it answers at once.
    const mainOver = measured === seq && BigInt(Atomics.load(state, ${CPU_US})) * 1000n >= target.cpuNs;
    if (cpu - since < target.cpuNs) {
      // Alone it stops an entry only when the host read the CPU the entry began at (else the
      // watchdog counts the time since its last look, before the entry, as the entry's).
      if (!mainOver || Atomics.load(state, ${START_CPU_US}) < 0) continue;
    } else if (measured !== ${CPU_UNMEASURED} && cpu - since < target.cpuNs * ${STEADY_CAP_SLICES}n) {
      if (!mainOver) continue;
    }
    if (Atomics.load(state, ${SEQ}) !== seq || Atomics.load(state, ${OPEN}) !== slot) continue;
    Atomics.store(state, ${STOPPED}, slot);
    try { target.isolate.dispose(); } catch {}
    seen = -1;
  }
  Atomics.store(state, ${WATCHING}, -1);
})`;

/**
 * Bounds inline entries without a timer per entry. isolated-vm's `timeout` starts a timer on a
 * shared timer thread for every entry, which wakes once per entry when it expires: under load that
 * cost about as much CPU as the whole request. The sentinel instead is one small isolate whose code
 * loops on its own thread, waking a few hundred times a second; the host only marks two shared
 * cells per entry (which the inline watchdog reads as well). A registered isolate is watched once the sentinel has taken the registry
 * that holds it ({@link watches}); until then its entries keep isolated-vm's `timeout`.
 */
export class InlineSentinel {
  private static instance: InlineSentinel | undefined;
  private readonly buffer = new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT);
  private readonly state = new Int32Array(this.buffer);
  private readonly targets = new Map<number, { isolate: ivm.Isolate; sliceMs: number }>();
  private readonly watchRef: ivm.Reference<(...args: never[]) => void>;
  /** Slots registered ahead for blank isolates (spares) that no transport has taken yet. */
  private readonly ahead = new Map<ivm.Isolate, number>();
  private nextSlot = 1;
  private generation = 0;
  private running = false;

  private constructor() {
    const isolate = new ivm.Isolate({ memoryLimit: 8 });
    const context = isolate.createContextSync();
    this.watchRef = context.evalSync(WATCH_SOURCE, { reference: true }) as ivm.Reference<
      (...args: never[]) => void
    >;
    this.state[WATCHING] = -1;
    this.state[CPU_SEQ] = CPU_UNMEASURED;
    // The same two cells tell the watchdog thread when the main thread is stuck inside an entry; it
    // writes the main thread's CPU in the open entry to the last two.
    watchInlineEntries(this.buffer, {
      seq: SEQ,
      open: OPEN,
      cpuSeq: CPU_SEQ,
      cpuUs: CPU_US,
      startCpuUs: START_CPU_US,
    });
  }

  /** The process's sentinel (one thread watches every host in the process). */
  static shared(): InlineSentinel {
    InlineSentinel.instance ??= new InlineSentinel();
    return InlineSentinel.instance;
  }

  /**
   * Watches `isolate`'s inline entries from now on, stopping one that uses over `sliceMs` of CPU.
   * An isolate registered ahead with the same slice keeps its slot, which the sentinel already
   * watches: it is only named now, and the sentinel woken if it slept.
   */
  register(isolate: ivm.Isolate, sliceMs: number): number {
    const early = this.ahead.get(isolate);
    if (early !== undefined) {
      this.ahead.delete(isolate);
      if (this.targets.get(early)?.sliceMs === sliceMs) {
        nameInlineSlot(early, bundleOf(isolate));
        // The sentinel holds a registry with this slot (or takes the current one next): only woken.
        if (this.running) this.wake();
        else this.changed();
        return early;
      }
      this.unregister(early);
    }
    const slot = this.watch(isolate, sliceMs);
    nameInlineSlot(slot, bundleOf(isolate));
    this.changed();
    return slot;
  }

  /**
   * Registers a blank isolate made ahead of a cold start (the isolate factory's spare), so that the
   * cold start's {@link register} finds it watched already: handing the sentinel a new registry
   * cost the first request about 0.1 ms of the main thread, and its first entry would run under
   * isolated-vm's `timeout` until the sentinel took it. Isolates registered ahead run no entries,
   * so with nothing else registered the sentinel holds the registry asleep, without ticking; the
   * cold start that takes the spare only wakes it. Undone by {@link releaseAhead}.
   */
  registerAhead(isolate: ivm.Isolate, sliceMs: number): number {
    const registered = this.ahead.get(isolate);
    if (registered !== undefined) return registered;
    const slot = this.watch(isolate, sliceMs);
    this.ahead.set(isolate, slot);
    this.changed();
    return slot;
  }

  /** A new slot for `isolate` in the registry (the sentinel takes it at the next change). */
  private watch(isolate: ivm.Isolate, sliceMs: number): number {
    const slot = this.nextSlot++;
    this.targets.set(slot, { isolate, sliceMs });
    return slot;
  }

  /** Stops watching `isolate` if it was registered ahead and nothing took it (a spare not used). */
  releaseAhead(isolate: ivm.Isolate): void {
    const slot = this.ahead.get(isolate);
    if (slot === undefined) return;
    this.ahead.delete(isolate);
    this.unregister(slot);
  }

  /** Stops watching `slot` (its isolate is gone), registered ahead or not. */
  unregister(slot: number): void {
    if (!this.targets.delete(slot)) return;
    for (const [isolate, early] of this.ahead) if (early === slot) this.ahead.delete(isolate);
    nameInlineSlot(slot, "");
    this.changed();
  }

  /** True when the sentinel has taken the registry as it is now: it watches every registered isolate. */
  get upToDate(): boolean {
    return Atomics.load(this.state, WATCHING) === this.generation;
  }

  /**
   * True when the sentinel watches `slot` now: it has taken the current registry and is awake (an
   * entry into an isolate registered ahead while it sleeps keeps isolated-vm's `timeout`).
   */
  watches(slot: number): boolean {
    return this.upToDate && Atomics.load(this.state, ASLEEP) === 0 && this.targets.has(slot);
  }

  /**
   * True when the last entry made through {@link enter} ran under isolated-vm's `timeout`: the
   * sentinel did not watch its isolate yet. Only such an entry can be stopped by isolated-vm itself.
   */
  lastEntryTimed = false;

  /**
   * One synchronous entry into `slot`'s isolate on the main thread; throws as applySync. Bounded by
   * the sentinel once it watches the isolate, else by isolated-vm's `timeout` (`timeoutMs`, wall
   * time), and marked for the inline watchdog in case V8 parks the thread.
   */
  enter(slot: number, entry: InlineEntry, args: unknown[], timeoutMs: number, startCpuNs?: number): void {
    const watched = this.watches(slot);
    this.lastEntryTimed = !watched;
    const copied = anyWrapped(args);
    const options = watched
      ? copied
        ? COPIED
        : PRIMITIVES_ONLY
      : { timeout: timeoutMs, ...(copied ? COPIED : PRIMITIVES_ONLY) };
    this.open(slot, startCpuNs);
    try {
      entry.applySync(undefined, args as never[], options);
    } finally {
      this.close();
    }
  }

  /**
   * Marks the start of an inline entry into `slot`'s isolate: every inline entry, watched or not,
   * so the inline watchdog sees it too. `startCpuNs` is the main thread's CPU now (a plain reading
   * of inline/thread-cpu.ts, read here unless the caller has one): the watchdog thread measures the
   * entry's CPU from it, so an entry is never charged time the host spent before it began.
   */
  open(slot: number, startCpuNs = threadCpuNs()): void {
    const startUs = startCpuNs === undefined ? -1 : Math.floor(startCpuNs / 1000) % 2 ** 31;
    Atomics.store(this.state, START_CPU_US, startUs);
    Atomics.add(this.state, SEQ, 1);
    Atomics.store(this.state, OPEN, slot);
  }

  /** Marks the end of the inline entry. */
  close(): void {
    Atomics.store(this.state, OPEN, 0);
  }

  /** True (once) when the sentinel stopped `slot`'s isolate. */
  stopped(slot: number): boolean {
    return Atomics.compareExchange(this.state, STOPPED, slot, 0) === slot;
  }

  /** The sentinel's ticks so far (modulo 2^32): it does not tick while asleep. */
  get ticks(): number {
    return Atomics.load(this.state, TICKS) >>> 0;
  }

  /**
   * Tells the sentinel a new registry is ready. It sleeps on it while every registered isolate was
   * registered ahead: those run no entries and are not worth a thread's wakes. The cell is set
   * before the generation moves, so no registry with an isolate that may run entries is ever
   * handed over asleep. While any isolate is registered, the sentinel's pending call keeps the
   * process's event loop alive, spares included: a host frees its spare when it closes.
   */
  private changed(): void {
    Atomics.store(this.state, ASLEEP, this.targets.size > this.ahead.size ? 0 : 1);
    this.generation++;
    Atomics.store(this.state, GENERATION, this.generation);
    Atomics.notify(this.state, GENERATION);
    this.signal();
    if (!this.running) void this.run();
  }

  /** Has the sentinel tick again, with the registry it holds (an isolate registered ahead was taken). */
  private wake(): void {
    Atomics.store(this.state, ASLEEP, 0);
    this.signal();
  }

  /** Wakes a sleeping sentinel to look at the cells again. */
  private signal(): void {
    Atomics.add(this.state, SIGNAL, 1);
    Atomics.notify(this.state, SIGNAL);
  }

  /** Hands the sentinel the registry again after every change, while any isolate is registered. */
  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.targets.size > 0) {
        const entries = [...this.targets].map(([slot, target]) => [slot, target.isolate, target.sliceMs]);
        const tickMs = Math.max(1, Math.min(...[...this.targets.values()].map((t) => t.sliceMs)) / 2);
        await this.watchRef
          .apply(undefined, [this.buffer, entries, this.generation, tickMs] as never[], {
            arguments: { copy: true },
          })
          .catch(async () => {
            // The sentinel failed (it should not): entries keep isolated-vm's timeout meanwhile.
            Atomics.store(this.state, WATCHING, -1);
            await new Promise((resolve) => setTimeout(resolve, 100).unref());
          });
      }
    } finally {
      this.running = false;
    }
  }
}
