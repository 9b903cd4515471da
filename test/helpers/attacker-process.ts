/**
 * Drives test/helpers/attacker.ts, hostile traffic from a process of its own (as an attacker's
 * would come: its CPU is not the host's), for the fair-scheduling test and bench/fairness.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setPriority } from "node:os";
import { LIMITS } from "../../sdk/protocol/index.js";

/** One attacked deployment: `calls` callers looping on query `name`, or `calls` calls at once. */
export interface AttackTarget {
  id: string;
  name: string;
  mode: "loop" | "flood";
  calls: number;
}

/** Answers by deployment id, then by status (0: failed without an answer). */
export type Answered = Record<string, Record<string, number>>;

/** A running attacker. */
export interface Attacker {
  /** How many of each target's calls it has had answered so far, by status. */
  answered(): Promise<Answered>;
  /** Stops it at once. */
  kill(): void;
}

/**
 * Starts the attack on `targets`, each at `urls[id]` (a deployment's origin), at the lowest
 * priority: a real attacker's CPU is on machines of their own, not on the host's cores; it still
 * sends as fast as it gets answers whenever a core is free. Resolves once every looping target has
 * had a call answered and every flooding target's queue is full: the attack is in full swing.
 */
export async function startAttacker(
  urls: Record<string, string>,
  targets: AttackTarget[],
): Promise<Attacker> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "test/helpers/attacker.ts", JSON.stringify({ urls, targets })],
    // Its stdin is a pipe from this process: it ends itself when this process dies.
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  if (process.platform === "linux" && child.pid !== undefined) setPriority(child.pid, 19);
  const stdout = child.stdout as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the attacker exited (${code}) before it was ready`)));
  });
  return { answered: () => answeredBy(child), kill: () => child.kill("SIGKILL") };
}

function answeredBy(child: ChildProcess): Promise<Answered> {
  const stdout = child.stdout as NodeJS.ReadableStream;
  return new Promise((resolve) => {
    let text = "";
    const read = (chunk: Buffer) => {
      text += chunk.toString();
      const line = text
        .split("\n")
        .find((each) => each.startsWith("answered ") && text.includes(`${each}\n`));
      if (line === undefined) return;
      stdout.off("data", read);
      resolve(JSON.parse(line.slice("answered ".length)) as Answered);
    };
    stdout.on("data", read);
    child.stdin?.write("count\n");
  });
}

/** What was answered between `before` and `after`, by id and status. */
export function answeredBetween(before: Answered, after: Answered): Answered {
  const between: Answered = {};
  for (const [id, byStatus] of Object.entries(after)) {
    const more: Record<string, number> = {};
    for (const [status, count] of Object.entries(byStatus)) {
      const added = count - (before[id]?.[status] ?? 0);
      if (added > 0) more[status] = added;
    }
    between[id] = more;
  }
  return between;
}

/** 20 tenants `<prefix>0` to `<prefix>19`, each keeping four calls of query `name` in flight. */
export function loopingTargets(prefix: string, name: string): AttackTarget[] {
  return Array.from({ length: 20 }, (_, i) => ({ id: `${prefix}${i}`, name, mode: "loop", calls: 4 }));
}

/**
 * 20 hostile tenants `<prefix>0` to `<prefix>19` at once: a third loop on `spin`, a third on
 * `alloc` (see fixtures/fairness), a third fill their queue with calls to `hang` and more.
 */
export function hostileTargets(prefix: string): AttackTarget[] {
  return Array.from({ length: 20 }, (_, i): AttackTarget => {
    const name = ["spin", "alloc", "hang"][i % 3] as string;
    const id = `${prefix}${i}`;
    return name === "hang"
      ? { id, name, mode: "flood", calls: LIMITS.deploymentCallsInFlight + LIMITS.deploymentQueuedCalls + 8 }
      : { id, name, mode: "loop", calls: 4 };
  });
}
