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
    /** The clients subscribed to a group, oldest first (any of them may take it on). */
    private readonly callersOf: (group: Group) => string[],
  ) {
    this.held = new HeldBytes(limits);
  }

  get limits(): HeldLimits {
    return this.held.limits;
  }

  /**
   * After a run of `group` whose outcome and read set take `bytes`: holds them and answers
   * undefined when they fit, else holds `refusedBytes` (its refusal), puts it in line and answers
   * which limit they would pass. Past the share of the client it is charged to, another client
   * subscribed to it with room takes it on, the oldest first: a client that filled its share
   * cannot refuse a query others share by having started it.
   */
  keep(group: Group, bytes: number, refusedBytes: number): keyof HeldLimits | undefined {
    const deployment = group.deployment;
    const before = this.held.of(group);
    const charged = group.caller;
    let passed = this.held.hold(deployment, group.caller, group, bytes);
    if (passed === "caller") {
      const roomy = this.callersOf(group).find(
        (caller) => caller !== charged && !this.held.passed(deployment, caller, group, bytes),
      );
      if (roomy !== undefined) {
        group.caller = roomy;
        passed = this.held.hold(deployment, roomy, group, bytes);
      }
    }
    if (!passed) {
      // It fits now (others waiting may too), or it holds less than before, or its old caller has room.
      const waited = group.roomNeeded !== undefined;
      group.roomNeeded = undefined;
      this.waiting.get(deployment)?.delete(group);
      if (waited || this.held.of(group) < before || group.caller !== charged) this.roomFreed(deployment);
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
   * A subscriber of `group` from client `left` left, others remain. While a subscriber of the
   * client it is charged to remains, nothing changes; else what it holds is charged from now on to
   * the oldest client with room for it, or the oldest one (who uses it, and would have been
   * charged had it subscribed first). The old client's share has room again.
   */
  subscriberLeft(group: Group, left: string): void {
    if (left !== group.caller) return;
    for (const subscriber of group.subscribers.keys()) if ((subscriber.caller ?? "") === group.caller) return;
    const callers = this.callersOf(group);
    if (callers.length === 0) return;
    const bytes = this.held.of(group);
    const next =
      callers.find((caller) => !this.held.passed(group.deployment, caller, group, bytes)) ??
      (callers[0] as string);
    group.caller = next;
    this.held.chargeTo(group, next);
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
   * beside the room promised to those run before them. Called on every release, so it asks each
   * limit once per pass for what it refused already: room promised only grows during a pass, so
   * once a growth did not fit a caller's share (or the deployment's, or the host's), no larger one
   * will. Before, a client with 16,000 groups waiting for room in its full share made each
   * unsubscribe anywhere in the deployment walk all of them in full (18 ms each; a good tenant's
   * calls at p50 1.2 s).
   */
  private roomFreed(deployment: string, except?: Group): void {
    const line = this.waiting.get(deployment);
    if (!line) return;
    const promised = { deployment: 0, caller: 0 };
    const promisedTo = new Map<string, number>();
    let tooMuch = Number.POSITIVE_INFINITY;
    const tooMuchFor = new Map<string, number>();
    for (const group of line) {
      if (group === except) continue;
      const need = group.roomNeeded ?? 0;
      const before = this.held.of(group);
      const fits = (caller: string): boolean => {
        const growth = need - before;
        const callerGrowth = caller === group.caller ? growth : need;
        if (growth >= tooMuch || callerGrowth >= (tooMuchFor.get(caller) ?? Number.POSITIVE_INFINITY))
          return false;
        promised.caller = promisedTo.get(caller) ?? 0;
        const passed = this.held.passed(deployment, caller, group, need, promised);
        if (passed === "caller") tooMuchFor.set(caller, callerGrowth);
        else if (passed !== undefined) tooMuch = growth;
        return passed === undefined;
      };
      const taker = fits(group.caller)
        ? group.caller
        : group.subscribers.size > 1
          ? this.callersOf(group).find((caller) => caller !== group.caller && fits(caller))
          : undefined;
      if (taker === undefined) continue;
      const grows = need - before;
      promised.deployment += grows;
      promisedTo.set(taker, (promisedTo.get(taker) ?? 0) + grows);
      line.delete(group);
      this.run(group);
    }
    if (line.size === 0) this.waiting.delete(deployment);
  }
}
