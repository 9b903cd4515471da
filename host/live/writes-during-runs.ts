import type { ReadSet } from "../db/index.js";
import type { Group } from "./group.js";
import { ReadSetIndex } from "./read-set-index.js";

/**
 * Written keys kept for one run before it counts as touched by every commit since it started
 * (keys of commits the host made anyway, kept a little longer).
 */
const MOST_KEPT_KEYS = 65_536;

/** The write sets committed while one group ran, and their keys together; `"all"`: too many. */
interface Seen {
  writes: Buffer[][];
  keys: number;
}

/**
 * The commits of a deployment made while its groups ran. A commit is matched against each group's
 * read set of its last run (the index), so a re-run whose reads differ from that run's (it reads
 * what the data it read first points to) missed a commit to what it read this time, and its
 * subscribers saw a stale value until the next commit touching it. Checked against the run's own
 * read set once it ends; a group with a commit it read runs again.
 */
export class WritesDuringRuns {
  /** Each deployment's groups executing now, with the write sets committed since they started. */
  private readonly running = new Map<string, Map<Group, Seen | "all">>();

  /** `group` starts executing. */
  begin(group: Group): void {
    let groups = this.running.get(group.deployment);
    if (!groups) {
      groups = new Map();
      this.running.set(group.deployment, groups);
    }
    groups.set(group, { writes: [], keys: 0 });
  }

  /** A commit of `deployment` wrote `writeSet` (undefined: too large to describe, anything). */
  written(deployment: string, writeSet: Buffer[] | undefined): void {
    const groups = this.running.get(deployment);
    if (!groups) return;
    for (const [group, seen] of groups) {
      if (seen === "all") continue;
      if (writeSet === undefined || seen.keys + writeSet.length > MOST_KEPT_KEYS) groups.set(group, "all");
      else {
        seen.writes.push(writeSet);
        seen.keys += writeSet.length;
      }
    }
  }

  /**
   * `group`'s run ended having read `readSet` (undefined: none, every commit touches it), which
   * `changed` what the index holds for it: whether a commit made while it ran wrote something it
   * read that the index did not know it read (a run that read what the last one read was matched
   * against those commits as they came). Once per run; later calls answer false.
   */
  end(group: Group, readSet: ReadSet | undefined, changed: boolean): boolean {
    const groups = this.running.get(group.deployment);
    const seen = groups?.get(group);
    if (!groups || seen === undefined) return false;
    groups.delete(group);
    if (groups.size === 0) this.running.delete(group.deployment);
    if (!changed || (seen !== "all" && seen.writes.length === 0)) return false;
    if (seen === "all" || readSet === undefined) return true;
    const index = new ReadSetIndex<Group>();
    index.set(group, readSet);
    return index.touched(seen.writes.flat()).size > 0;
  }

  /** Forgets deleted deployment `deployment`'s runs. */
  forget(deployment: string): void {
    this.running.delete(deployment);
  }
}
