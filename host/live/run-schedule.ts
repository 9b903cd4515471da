import { LIMITS } from "../../sdk/protocol/index.js";
import type { Group } from "./group.js";
import { startRun } from "./group-runs.js";
import { RerunQueue } from "./rerun-queue.js";

/**
 * When live-query groups run: each in its turn of its deployment's {@link RerunQueue}, or once
 * more after the run executing now (coalescing bursts of commits); a run still waiting for its
 * turn will read after the commit anyway. Keeps the runs due, for {@link settled}.
 */
export class RunSchedule {
  private readonly queues = new Map<string, RerunQueue>();
  private readonly pending = new Set<Promise<void>>();

  /** `execute`: runs a group's query once (see {@link startRun}). */
  constructor(private readonly execute: (group: Group) => Promise<void>) {}

  /** Runs `group` in its turn, or once more after the run executing now; see the class. */
  schedule(group: Group): Promise<void> {
    if (group.running) {
      if (group.executing) group.dirty = true;
      return group.running;
    }
    let queue = this.queues.get(group.deployment);
    if (!queue) {
      queue = new RerunQueue(LIMITS.liveRerunsInFlight);
      this.queues.set(group.deployment, queue);
    }
    const run = startRun(group, queue, this.execute).finally(() => {
      this.pending.delete(run);
    });
    this.pending.add(run);
    return run;
  }

  /** Resolves once no run is due, re-runs asked for meanwhile included. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Forgets deleted deployment `deployment`'s turns. */
  forget(deployment: string): void {
    this.queues.delete(deployment);
  }

  clear(): void {
    this.queues.clear();
  }
}
