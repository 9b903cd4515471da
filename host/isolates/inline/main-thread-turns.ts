import { LIMITS } from "../../../sdk/protocol/index.js";

/** A deployment's queue of inline entries, as the main thread's turns run it (see turn-queue.ts). */
export interface TurnRunner {
  /** Inline CPU (ns) its deployment used recently: the lightest go first. */
  recentNs(): number;
  /** Enters queued entries, at least one, until `untilMs` (`performance.now()`); true while some are left. */
  runUntil(untilMs: number): boolean;
}

/**
 * The main thread's inline turns, shared by every deployment in the process (the main thread is
 * one). Queues with entries wait for the end of the event loop's turn (`setImmediate`); then they
 * run, those of the deployments that used the least inline CPU recently first, until the turn has
 * lasted {@link LIMITS.inlineTurnMs}. The others wait for the next turn, after the event loop has
 * read the sockets again. So however many deployments have inline work, one turn holds the main
 * thread for about that long plus one entry (at most a slice), and a light tenant's entry goes in
 * the turn after its request, ahead of heavy ones.
 */
export class MainThreadTurns {
  private static instance: MainThreadTurns | undefined;
  private readonly waiting = new Set<TurnRunner>();
  private scheduled = false;

  /** The process's turns. */
  static shared(): MainThreadTurns {
    MainThreadTurns.instance ??= new MainThreadTurns();
    return MainThreadTurns.instance;
  }

  /** `runner` has entries: it runs at the end of this turn, or a later one. */
  ready(runner: TurnRunner): void {
    this.waiting.add(runner);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  /**
   * One turn. A runner stays waiting until it has run (one that throws is run again next turn);
   * one with entries left goes to the back, behind those of the same recent CPU.
   */
  private readonly run = (): void => {
    this.scheduled = false;
    // A stable sort: among equals, the first to have waited goes first.
    const runners = [...this.waiting].sort((a, b) => a.recentNs() - b.recentNs());
    const untilMs = performance.now() + LIMITS.inlineTurnMs;
    try {
      for (const [at, runner] of runners.entries()) {
        if (at > 0 && performance.now() >= untilMs) break;
        const more = runner.runUntil(untilMs);
        this.waiting.delete(runner);
        if (more) this.waiting.add(runner);
      }
    } finally {
      if (this.waiting.size > 0) this.schedule();
    }
  };
}
