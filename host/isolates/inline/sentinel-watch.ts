/**
 * The inline sentinel's own code, which runs in its isolate on its own thread, and the cells of
 * state it shares with the host (see sentinel.ts).
 */

/** Cells of the state the host and the sentinel share (an Int32Array over a SharedArrayBuffer). */
export const SEQ = 0; // inline entries opened so far
export const OPEN = 1; // slot of the isolate the host is inside now; 0: none
export const GENERATION = 2; // the host's registry generation (bumped on every change)
export const WATCHING = 3; // the generation the sentinel is watching now; -1: none
export const STOPPED = 4; // slot of the isolate the sentinel stopped last; 0: none
export const CPU_SEQ = 5; // the entry the watchdog thread measured the main thread's CPU in; CPU_UNMEASURED: it cannot
export const CPU_US = 6; // the main thread's CPU in that entry so far (µs), as the watchdog thread measured it
export const START_CPU_US = 7; // the main thread's CPU when the open entry began (µs, modulo 2^31); -1: not read
export const ASLEEP = 8; // 1 while no registered isolate may run entries (spares alone): the sentinel does not tick
export const TICKS = 9; // the sentinel's ticks so far (modulo 2^32)
export const SIGNAL = 10; // bumped by every change of the registry or of ASLEEP: what the sentinel sleeps on
export const EXITING = 11; // 1 once the process exits: the sentinel returns, which exit waits for
export const CELLS = 12;
/** {@link CPU_SEQ} until the watchdog thread found it can read the main thread's CPU. */
export const CPU_UNMEASURED = -2;
/**
 * Past this many slices on the steady clock an entry is stopped even if the main thread's CPU in it
 * is still under a slice: the machine held the host that long, and the entry is not let off for good.
 */
const STEADY_CAP_SLICES = 5;

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
 * host makes after that reading is missed. Returns when the host changes the registry, once no
 * entry is open: a change made from inside an entry would otherwise leave that entry unwatched.
 * Returns at once when the process exits ({@link EXITING}): exit waits for isolated-vm's threads.
 */
export const WATCH_SOURCE = `(function watch(buffer, entries, generation, tickMs) {
  const state = new Int32Array(buffer);
  const targets = new Map(entries.map(([slot, isolate, sliceMs]) => [slot, { isolate, cpuNs: BigInt(sliceMs) * 1000000n }]));
  Atomics.store(state, ${WATCHING}, generation);
  let seen = -1;
  let since = 0n;
  for (;;) {
    const signal = Atomics.load(state, ${SIGNAL});
    if (Atomics.load(state, ${EXITING}) === 1) break;
    // A change made while an entry is open (from a host call inside it) is taken once it closes:
    // the host cannot hand over the new registry before, and the open entry is watched meanwhile.
    const changed = Atomics.load(state, ${GENERATION}) !== generation;
    if (changed && Atomics.load(state, ${OPEN}) === 0) break;
    if (!changed && Atomics.load(state, ${ASLEEP}) === 1) {
      Atomics.wait(state, ${SIGNAL}, signal);
      seen = -1;
      continue;
    }
    Atomics.wait(state, ${SIGNAL}, signal, tickMs);
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
