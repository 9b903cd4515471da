import type { Group } from "./group.js";
import { HeldBytes, type HeldLimits } from "./held-bytes.js";

/**
 * What the shared subscriptions hold ({@link HeldBytes}), and those whose last run did not fit.
 * Such a group keeps no read set, so writes do not re-run it; it runs again (through `run`) once
 * the room its run needed is free in its deployment and its caller's share, oldest first, or in
 * turn as writes come, one per write, since what it reads may have shrunk (room freed by another
 * deployment, under the host's limit, reaches it that way). Never more: an unsubscribe freeing a
 * few bytes runs none of them.
 */
export class LiveState {
  private readonly held: HeldBytes<Group>;
  /** Groups whose last run did not fit, by deployment, oldest first. */
  private readonly waiting = new Map<string, Set<Group>>();

  constructor(
    limits: HeldLimits,
    private readonly run: (group: Group) => void,
  ) {
    this.held = new HeldBytes(limits);
  }

  get limits(): HeldLimits {
    return this.held.limits;
  }

  /**
   * After a run of `group` whose outcome and read set take `bytes`: holds them and answers
   * undefined when they fit, else holds `refusedBytes` (its refusal), puts it in line and answers
   * which limit they would pass.
   */
  keep(group: Group, bytes: number, refusedBytes: number): keyof HeldLimits | undefined {
    const deployment = group.deployment;
    const before = this.held.of(group);
    const passed = this.held.hold(deployment, group.caller, group, bytes);
    if (!passed) {
      // It fits now (others waiting may too), or it holds less than before.
      const waited = group.roomNeeded !== undefined;
      group.roomNeeded = undefined;
      this.waiting.get(deployment)?.delete(group);
      if (waited || this.held.of(group) < before) this.roomFreed(deployment);
      return undefined;
    }
    this.held.hold(deployment, group.caller, group, refusedBytes, true);
    group.roomNeeded = bytes;
    const line = this.waiting.get(deployment) ?? new Set<Group>();
    this.waiting.set(deployment, line);
    line.delete(group);
    line.add(group);
    // What it held before is free now, for the others waiting.
    if (this.held.of(group) < before) this.roomFreed(deployment, group);
    return passed;
  }

  /**
   * `group`'s bytes are charged to `caller` from now on (the subscribers of the caller it was
   * charged to left; others remain). The old caller's share has room again.
   */
  chargeTo(group: Group, caller: string): void {
    if (group.caller === caller) return;
    group.caller = caller;
    this.held.chargeTo(group, caller);
    this.roomFreed(group.deployment);
  }

  /** `group` ended (its last subscriber left). */
  release(group: Group): void {
    this.waiting.get(group.deployment)?.delete(group);
    this.held.release(group);
    this.roomFreed(group.deployment);
  }

  /** A write to `deployment`: the group waiting longest runs again. */
  written(deployment: string): void {
    const line = this.waiting.get(deployment);
    const oldest = line?.values().next().value;
    if (!line || !oldest) return;
    line.delete(oldest);
    if (line.size === 0) this.waiting.delete(deployment);
    this.run(oldest);
  }

  /** Forgets deleted deployment `deployment`'s groups, `groups`, running none of those waiting. */
  forget(deployment: string, groups: Iterable<Group>): void {
    this.waiting.delete(deployment);
    for (const group of groups) this.held.release(group);
  }

  clear(): void {
    this.held.clear();
    this.waiting.clear();
  }

  /**
   * Runs, oldest first, the groups of `deployment` waiting (but `except`) whose need fits now,
   * beside the room promised to those run before them.
   */
  private roomFreed(deployment: string, except?: Group): void {
    const line = this.waiting.get(deployment);
    if (!line) return;
    let promised = 0;
    const promisedTo = new Map<string, number>();
    for (const group of line) {
      if (group === except) continue;
      const need = group.roomNeeded ?? 0;
      const toCaller = promisedTo.get(group.caller) ?? 0;
      if (this.held.passed(deployment, group.caller, group, need, { deployment: promised, caller: toCaller }))
        continue;
      const grows = need - this.held.of(group);
      promised += grows;
      promisedTo.set(group.caller, toCaller + grows);
      line.delete(group);
      this.run(group);
    }
    if (line.size === 0) this.waiting.delete(deployment);
  }
}
