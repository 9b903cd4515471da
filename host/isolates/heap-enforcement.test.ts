import { afterEach, describe, expect, it } from "vitest";
import { HeapEnforcement } from "./heap-enforcement.js";
import type { IsolateKeeper } from "./isolate-keeper.js";

/**
 * A runner as the enforcement sees it: its owner, its live isolate's reading, what an isolate
 * draining counts for, and what was done to it.
 */
class FakeRunner {
  readonly heap = { bytes: 0, liveBytes: 0 };
  stopped = false;

  constructor(
    readonly owner: string,
    public isLive: boolean,
    readonly busy: boolean,
    private readonly enforcement: HeapEnforcement,
  ) {}

  /** A new reading of `bytes`, as HeapWatch reports it to the budget. */
  read(bytes: number): void {
    this.move(bytes - this.heap.liveBytes, bytes);
  }

  /** An isolate draining (its live one replaced) now counts for `bytes`. */
  drain(bytes: number): void {
    this.move(bytes - (this.heap.bytes - this.heap.liveBytes), this.heap.liveBytes);
  }

  private move(delta: number, liveBytes: number): void {
    this.heap.bytes += delta;
    this.heap.liveBytes = liveBytes;
    this.enforcement.budget.moved(delta);
  }

  forgetGoneHeap(): void {
    if (!this.isLive && this.heap.liveBytes > 0) this.read(0);
  }

  stopForHostMemory(): void {
    this.stopped = true;
    this.isLive = false;
    this.read(0);
    this.drain(0);
  }

  weighWhileBusy(): void {}
}

const enforcements: HeapEnforcement[] = [];
afterEach(() => {
  for (const enforcement of enforcements.splice(0)) enforcement.close();
});

function setUp(maxBytes: number) {
  const runners: FakeRunner[] = [];
  const enforcement = new HeapEnforcement(
    maxBytes,
    () => runners as unknown as IsolateKeeper[],
    (runner) => (runner as unknown as FakeRunner).owner,
    () => {},
  );
  enforcements.push(enforcement);
  const add = (owner: string, live: boolean, busy: boolean) => {
    const runner = new FakeRunner(owner, live, busy, enforcement);
    runners.push(runner);
    return runner;
  };
  return { enforcement, add };
}

describe("holding the isolates' heaps to the budget", () => {
  it("forgets the reading of an isolate gone by other means before it stops anyone's (found by review)", () => {
    const { enforcement, add } = setUp(60);
    // Read at 50, then gone without its keeper hearing (isolated-vm at its own memory limit).
    const ghost = add("dev-a", true, false);
    ghost.read(50);
    ghost.isLive = false;
    add("dev-w", true, false).read(1);
    // A busy isolate over an even share of the two owners left, 30, but within the budget.
    const victim = add("dev-v", true, true);
    victim.read(35);
    expect(victim.stopped).toBe(false);
    expect(enforcement.budget.bytes).toBe(36);
  });

  it("stops the busy isolates of the owner over its share until the heaps fit, the heaviest first", () => {
    const { enforcement, add } = setUp(60);
    const light = add("dev-v", true, true);
    light.read(10);
    const small = add("dev-a", true, true);
    small.read(15);
    const big = add("dev-a", true, true);
    big.read(20);
    const bigger = add("dev-a", true, true);
    bigger.read(25);
    expect([bigger.stopped, big.stopped, small.stopped, light.stopped]).toEqual([true, false, false, false]);
    expect(enforcement.budget.bytes).toBe(45);
  });

  it("weighs an isolate draining with its owner's, and stops it before another owner's busy isolate", () => {
    const { enforcement, add } = setUp(60);
    const victim = add("dev-v", true, true);
    victim.read(25);
    // Redeployed with a call still in the old isolate, not live yet again: only the drain counts.
    const redeployer = add("dev-a", false, true);
    redeployer.drain(50);
    expect(redeployer.stopped).toBe(true);
    expect(victim.stopped).toBe(false);
    expect(enforcement.budget.bytes).toBe(25);
  });
});
