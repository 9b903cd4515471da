import type { Group } from "./group.js";
import { HeldBytes } from "./held-bytes.js";

/**
 * What the shared subscriptions of each deployment hold ({@link HeldBytes}), and those whose last
 * run did not fit. Such a group keeps no read set, so writes do not re-run it; it runs again
 * (through `run`) once the room its run needed is free, oldest first, or in turn as writes come,
 * one per write, since what it reads may have shrunk. Never more: an unsubscribe freeing a few
 * bytes runs none of them.
 */
export class LiveState {
  private readonly held: HeldBytes<Group>;
  /** Groups whose last run did not fit, by deployment, oldest first. */
  private readonly waiting = new Map<string, Set<Group>>();

  constructor(
    limit: number,
    private readonly run: (group: Group) => void,
  ) {
    this.held = new HeldBytes(limit);
  }

  get limit(): number {
    return this.held.limit;
  }

  /**
   * After a run of `group` whose outcome and read set take `bytes`: holds them and answers true
   * when they fit, else holds `refusedBytes` (its refusal), puts it in line and answers false.
   */
  keep(group: Group, bytes: number, refusedBytes: number): boolean {
    const deployment = group.deployment;
    const before = this.held.of(group);
    if (this.held.hold(deployment, group, bytes)) {
      // It fits now (others waiting may too), or it holds less than before.
      const waited = group.roomNeeded !== undefined;
      group.roomNeeded = undefined;
      this.waiting.get(deployment)?.delete(group);
      if (waited || this.held.of(group) < before) this.roomFreed(deployment);
      return true;
    }
    this.held.hold(deployment, group, refusedBytes, true);
    group.roomNeeded = bytes;
    const line = this.waiting.get(deployment) ?? new Set<Group>();
    this.waiting.set(deployment, line);
    line.delete(group);
    line.add(group);
    // What it held before is free now, for the others waiting.
    if (this.held.of(group) < before) this.roomFreed(deployment, group);
    return false;
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

  /** Runs, oldest first, the groups of `deployment` waiting (but `except`) whose need fits now. */
  private roomFreed(deployment: string, except?: Group): void {
    const line = this.waiting.get(deployment);
    if (!line) return;
    let room = this.held.limit - this.held.ofDeployment(deployment);
    for (const group of line) {
      const need = (group.roomNeeded ?? 0) - this.held.of(group);
      if (group === except || need > room) continue;
      room -= need;
      line.delete(group);
      this.run(group);
    }
    if (line.size === 0) this.waiting.delete(deployment);
  }
}
