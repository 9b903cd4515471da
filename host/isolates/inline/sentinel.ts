import ivm from "isolated-vm";
import { anyWrapped } from "../../../sdk/protocol/index.js";
import { crashWordsOf } from "../crash-subjects.js";
import type { InlineEntry } from "../isolate-loader.js";
import {
  ASLEEP,
  CELLS,
  CPU_SEQ,
  CPU_UNMEASURED,
  CPU_US,
  EXITING,
  GENERATION,
  OPEN,
  SEQ,
  SIGNAL,
  START_CPU_US,
  STOPPED,
  TICKS,
  WATCH_SOURCE,
  WATCHING,
} from "./sentinel-watch.js";
import { threadCpuNs } from "./thread-cpu.js";
import { nameInlineSlot, watchInlineEntries } from "./watchdog.js";

/**
 * Options of an inline entry the sentinel bounds. Inline entries and calls pass only numbers and
 * strings, which cross as they are; asking for a copy would serialize each one (about 0.4 µs per
 * crossing), and anything else is refused by isolated-vm as not transferable.
 */
const PRIMITIVES_ONLY = {} as const;
/** Options of an entry whose arguments hold a long string wrapped (sdk/protocol/crossing-text.ts). */
const COPIED = { arguments: { copy: true } } as const;

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
    // Exit waits for isolated-vm's threads, the sentinel's among them: asleep or ticking, its loop
    // would never return, and `process.exit` hung.
    process.once("exit", () => {
      Atomics.store(this.state, EXITING, 1);
      this.signal();
    });
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
        nameInlineSlot(early, crashWordsOf(isolate));
        // The sentinel holds a registry with this slot, or takes the current one next (it runs
        // while any isolate is registered): it only needs waking.
        this.wake();
        return early;
      }
      this.unregister(early);
    }
    const slot = this.watch(isolate, sliceMs);
    nameInlineSlot(slot, crashWordsOf(isolate));
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

  /**
   * Tells the watchdog again whose code `isolate` runs, once that changed (crash-subjects.ts): a
   * deploy's isolate now serving, or its deployment claimed by a developer.
   */
  renamed(isolate: ivm.Isolate): void {
    for (const [slot, target] of this.targets)
      if (target.isolate === isolate) nameInlineSlot(slot, crashWordsOf(isolate));
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
