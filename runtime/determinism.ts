/**
 * Queries and mutations are deterministic: `Math.random` is seeded per execution and the clock is
 * frozen at its start, so a re-run of a subscription gives the same answer for the same data.
 * Handlers run one at a time per isolate, so one global state per execution is exact.
 */

let seedState = [1, 2, 3, 4];
let frozenNow = 0;

function sfc32(): number {
  let [a, b, c, d] = seedState as [number, number, number, number];
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
  seedState = [a, b, c, d];
  return (t >>> 0) / 4294967296;
}

/** Starts an execution: seeds `Math.random` and freezes `Date.now()` / `new Date()`. */
export function beginExecution(now: number, seed: number): void {
  frozenNow = now;
  seedState = [seed >>> 0, 0x9e3779b9, 0x243f6a88, (seed ^ 0x85a308d3) >>> 0];
  for (let i = 0; i < 12; i++) sfc32();
}

/** Installs the deterministic `Math.random` and `Date`. */
export function installDeterminism(): void {
  Object.defineProperty(Math, "random", { value: sfc32, writable: false, configurable: false });
  const RealDate = Date;
  const FrozenDate = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new RealDate(frozenNow).toString();
    return args.length === 0
      ? new RealDate(frozenNow)
      : new (RealDate as unknown as new (...a: unknown[]) => Date)(...args);
  } as unknown as DateConstructor;
  Object.defineProperty(FrozenDate, "now", { value: () => frozenNow });
  Object.defineProperty(FrozenDate, "parse", { value: RealDate.parse });
  Object.defineProperty(FrozenDate, "UTC", { value: RealDate.UTC });
  Object.defineProperty(FrozenDate, "prototype", { value: RealDate.prototype });
  Object.defineProperty(globalThis, "Date", { value: FrozenDate, writable: false, configurable: false });
}
