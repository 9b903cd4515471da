import type { SessionGate } from "./open-sessions.js";

/**
 * Open sessions to read again after other hosts' commits named their records (or named no keys),
 * {@link RECHECKS_AT_ONCE} reads at a time over the host's small pool of connections, each gate
 * once however many commits named it meanwhile, and deployments taking turns: one tenant's wide
 * commits made another host read every open session of it at once per commit, and another
 * tenant's sign-out waited behind them.
 */
export class SessionRechecks {
  /** Gates waiting by deployment, in the order the deployments take turns. */
  private readonly waiting = new Map<string, Set<SessionGate>>();
  private running = 0;

  constructor(
    /** Reads the gate's session again and ends the gate if it is over. */
    private readonly read: (gate: SessionGate) => Promise<void>,
    private readonly atOnce = RECHECKS_AT_ONCE,
  ) {}

  /** Reads `gate` (of `deployment`) again soon, unless it is ended or waits already. */
  add(deployment: string, gate: SessionGate): void {
    if (gate.ended) return;
    const waiting = this.waiting.get(deployment);
    if (waiting?.has(gate)) return;
    if (waiting) waiting.add(gate);
    else this.waiting.set(deployment, new Set([gate]));
    this.next();
  }

  /** The next gate: the first of the deployment whose turn it is (that deployment then goes last). */
  private take(): SessionGate | undefined {
    for (const [deployment, gates] of this.waiting) {
      this.waiting.delete(deployment);
      const gate = gates.values().next().value;
      if (gate === undefined) continue;
      gates.delete(gate);
      if (gates.size > 0) this.waiting.set(deployment, gates);
      return gate;
    }
    return undefined;
  }

  private next(): void {
    while (this.running < this.atOnce) {
      const gate = this.take();
      if (gate === undefined) return;
      this.running++;
      void this.read(gate)
        .catch(() => {})
        .finally(() => {
          this.running--;
          this.next();
        });
    }
  }
}

/** Session reads at once (see {@link SessionRechecks}). */
const RECHECKS_AT_ONCE = 2;
