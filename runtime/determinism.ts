/**
 * Queries and mutations are deterministic: `Math.random` is seeded per execution and the clock is
 * frozen at its start, so a re-run of a subscription gives the same answer for the same data.
 *
 * Several executions may be in flight in one isolate, but only one runs at a time, and user code
 * resumes only at points the runtime controls (the start of a handler and the return of each
 * platform call). The runtime re-enters the execution's own state at each of those points, so every
 * execution sees its own frozen clock and its own random sequence.
 */

/** One execution's clock and random state, and how it reaches the host. */
export interface ExecutionState {
  now: number;
  random: [number, number, number, number];
  /** True when the host runs this execution inline on its main thread (see bridge.ts). */
  inline: boolean;
}

let current: ExecutionState = { now: 0, random: [1, 2, 3, 4], inline: false };

function sfc32(): number {
  const state = current.random;
  let [a, b, c, d] = state;
  a >>>= 0;
  b >>>= 0;
  c >>>= 0;
  d >>>= 0;
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

/** Creates the state of a new execution and makes it current. */
export function beginExecution(now: number, seed: number, inline: boolean): ExecutionState {
  current = { now, random: [seed >>> 0, 0x9e3779b9, 0x243f6a88, (seed ^ 0x85a308d3) >>> 0], inline };
  for (let i = 0; i < 12; i++) sfc32();
  return current;
}

/** Makes `state` current again (called whenever an execution resumes). */
export function resumeExecution(state: ExecutionState): void {
  current = state;
}

/** Installs the deterministic `Math.random` and `Date`. */
export function installDeterminism(): void {
  Object.defineProperty(Math, "random", { value: sfc32, writable: false, configurable: false });
  const RealDate = Date;
  const FrozenDate = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new RealDate(current.now).toString();
    return args.length === 0
      ? new RealDate(current.now)
      : new (RealDate as unknown as new (...a: unknown[]) => Date)(...args);
  } as unknown as DateConstructor;
  Object.defineProperty(FrozenDate, "now", { value: () => current.now });
  Object.defineProperty(FrozenDate, "parse", { value: RealDate.parse });
  Object.defineProperty(FrozenDate, "UTC", { value: RealDate.UTC });
  Object.defineProperty(FrozenDate, "prototype", { value: RealDate.prototype });
  Object.defineProperty(globalThis, "Date", { value: FrozenDate, writable: false, configurable: false });
}
