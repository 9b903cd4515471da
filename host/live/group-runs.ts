import { type Group, wakeWaiters } from "./group.js";
import type { RerunQueue } from "./rerun-queue.js";

/**
 * Starts a run of `group`, which has none due: `execute` in its turn of `turns`, then again, behind
 * the runs that waited meanwhile, for as long as a commit came while it executed (it read before
 * that commit). The run is `group.running` until none is due; it settles then, and rejects when
 * `execute` throws.
 */
export function startRun(
  group: Group,
  turns: RerunQueue,
  execute: (group: Group) => Promise<void>,
): Promise<void> {
  let run: Promise<void> | undefined;
  let over = false;
  // The group stops being due in the same step its run settles: a commit arriving in between
  // would otherwise find it still running but not executing, and be neither run nor noted.
  const finishRun = () => {
    over = true;
    if (group.running === run) group.running = undefined;
    wakeWaiters(group, true);
  };
  run = new Promise<void>((resolve, reject) => {
    const turn = async (): Promise<void> => {
      // Everyone left while it waited for its turn: nobody to tell.
      if (group.subscribers.size === 0) {
        finishRun();
        resolve();
        return;
      }
      group.executing = true;
      group.dirty = false;
      group.started++;
      try {
        await execute(group);
      } catch (error) {
        finishRun();
        reject(error);
        return;
      } finally {
        group.executing = false;
        group.finished++;
        wakeWaiters(group, false);
      }
      if (group.dirty) turns.enqueue(turn);
      else {
        finishRun();
        resolve();
      }
    };
    // A free place runs the turn at once: it may even be over before `run` is known here.
    turns.enqueue(turn);
  });
  if (!over) group.running = run;
  return run;
}
