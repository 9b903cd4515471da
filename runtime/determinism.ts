/**
 * Queries and mutations are deterministic: `Math.random` is seeded per execution and the clock is
 * frozen at its start, so a re-run of a subscription gives the same answer for the same data.
 *
 * Several executions may be in flight in one isolate, but only one runs at a time, and user code
 * resumes only at points the runtime controls (the start of a handler and the return of each
 * platform call). The runtime re-enters the execution's own state at each of those points, so every
 * execution sees its own frozen clock and its own random sequence.
 */

import { boundedDateParse, dateArgument } from "./date-bounds.js";

/** One execution's clock and random state, and how it reaches the host. */
export interface ExecutionState {
  /** The host's number of the execution (its syscalls carry it); 0 before any began. */
  requestId: number;
  now: number;
  random: [number, number, number, number];
  /** True when the host runs this execution inline on its main thread (see bridge.ts). */
  inline: boolean;
}

let current: ExecutionState = { requestId: 0, now: 0, random: [1, 2, 3, 4], inline: false };

/**
 * The next number of the current execution's sequence. The state is read by index, not
 * destructured: destructuring goes through the array iterator, which made the first execution in
 * a fresh isolate (interpreted, its iterator machinery cold) spend about 30 µs in these 12 rounds.
 */
function sfc32(): number {
  const state = current.random;
  let a = state[0] >>> 0;
  let b = state[1] >>> 0;
  let c = state[2] >>> 0;
  let d = state[3] >>> 0;
  const t = (((a + b) | 0) + d) | 0;
  d = (d + 1) | 0;
  a = b ^ (b >>> 9);
  b = (c + (c << 3)) | 0;
  c = (c << 21) | (c >>> 11);
  c = (c + t) | 0;
  state[0] = a;
  state[1] = b;
  state[2] = c;
  state[3] = d;
  return (t >>> 0) / 4294967296;
}

/** Creates the state of execution `requestId` and makes it current. */
export function beginExecution(
  requestId: number,
  now: number,
  seed: number,
  inline: boolean,
): ExecutionState {
  current = {
    requestId,
    now,
    random: [seed >>> 0, 0x9e3779b9, 0x243f6a88, (seed ^ 0x85a308d3) >>> 0],
    inline,
  };
  for (let i = 0; i < 12; i++) sfc32();
  return current;
}

/**
 * The execution whose code runs now (the last one begun or resumed): what `console` writes for. A
 * continuation of an execution that has answered still runs as it (its calls are then refused).
 */
export function currentExecution(): ExecutionState {
  return current;
}

/** Makes `state` current again (called whenever an execution resumes). */
export function resumeExecution(state: ExecutionState): void {
  current = state;
}

/** Defines `object[name]` as `value`, neither writable nor configurable. */
function lock(object: object, name: string, value: unknown): void {
  Object.defineProperty(object, name, { value, writable: false, configurable: false });
}

/**
 * A `Date` that reads the frozen clock, and parses no string past date-bounds.ts's bound. It is installed both as the global and as
 * `Date.prototype.constructor`, so no constructor chain reaches the real one; subclasses work
 * (`new.target` is kept). Intrinsics are captured now: later patches by capsule code cannot
 * intercept a call that holds the real constructor.
 */
function frozenDate(): DateConstructor {
  const RealDate = Date;
  const construct = Reflect.construct;
  const frozen = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new RealDate(current.now).toString();
    if (args.length === 1) args[0] = dateArgument(args[0]);
    return construct(RealDate, args.length === 0 ? [current.now] : args, new.target);
  } as unknown as DateConstructor;
  lock(frozen, "name", RealDate.name);
  lock(frozen, "length", RealDate.length);
  lock(frozen, "now", () => current.now);
  lock(frozen, "parse", boundedDateParse(RealDate.parse));
  lock(frozen, "UTC", RealDate.UTC);
  lock(frozen, "prototype", RealDate.prototype);
  lock(RealDate.prototype, "constructor", frozen);
  return frozen;
}

/** `Intl.DateTimeFormat`'s `format()` and `formatToParts()` without a date read the frozen clock. */
function freezeDateTimeFormat(): void {
  const prototype = Intl.DateTimeFormat.prototype;
  const apply = Reflect.apply;
  const formatGetter = Object.getOwnPropertyDescriptor(prototype, "format")?.get as () => (
    d?: unknown,
  ) => string;
  const formatToParts = prototype.formatToParts;
  Object.defineProperty(prototype, "format", {
    get(this: Intl.DateTimeFormat) {
      const format = apply(formatGetter, this, []);
      return (date?: unknown) => format(date === undefined ? current.now : date);
    },
    configurable: false,
  });
  lock(
    prototype,
    "formatToParts",
    {
      formatToParts(this: Intl.DateTimeFormat, date?: Date | number) {
        return apply(formatToParts, this, [date === undefined ? current.now : date]);
      },
    }.formatToParts,
  );
}

/**
 * Globals a capsule never gets. Each would run its code, or hold memory, where no limit reaches:
 * - `FinalizationRegistry` and `WeakRef`: a cleanup callback runs whenever V8 collects, after the
 *   call that registered it answered, when no CPU limit watches the isolate (it could spin for
 *   good); and when V8 collects is not deterministic.
 * - `WebAssembly`: a `WebAssembly.Memory` lives outside the V8 heap, so the isolate's memory
 *   limit does not count it (one deployment held 2 GiB), and an asynchronous compile resumes the
 *   capsule after its call answered.
 */
const REMOVED_GLOBALS = ["FinalizationRegistry", "WeakRef", "WebAssembly", "SharedArrayBuffer"] as const;

/**
 * Installs the deterministic `Math.random`, `Date` and `Intl.DateTimeFormat`, and removes
 * {@link REMOVED_GLOBALS} and the waits of `Atomics`:
 * - `Atomics.waitAsync`: a timer, the only one an isolate has, whose timeout aborts the host
 *   process under isolated-vm.
 * - `Atomics.wait` (and `SharedArrayBuffer`, the only memory it waits on): it blocks its thread
 *   without using CPU. An inline handler runs on the host's main thread, charged the CPU it uses:
 *   a wait of 90 ms held every tenant's requests for 90 ms, charged 1.
 */
export function installDeterminism(): void {
  lock(Math, "random", sfc32);
  lock(globalThis, "Date", frozenDate());
  freezeDateTimeFormat();
  delete (Atomics as { waitAsync?: unknown }).waitAsync;
  delete (Atomics as { wait?: unknown }).wait;
  for (const name of REMOVED_GLOBALS) delete (globalThis as Record<string, unknown>)[name];
}
