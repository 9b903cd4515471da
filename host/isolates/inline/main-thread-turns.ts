import { LIMITS } from "../../../sdk/protocol/index.js";

/** A deployment's queue of inline entries, as the main thread's turns run it (see turn-queue.ts). */
export interface TurnRunner {
  /** Inline CPU (ns) its deployment used recently: the lightest go first. */
  recentNs(): number;
  /** How long one of its entries holds the main thread, as learnt so far (ms; 0: not known yet). */
  typicalEntryMs(): number;
  /** Enters queued entries, at least one, until `untilMs` (on the turns' clock); true while some are left. */
  runUntil(untilMs: number): boolean;
}

/** An entry known to take at most this share of a turn's budget is light: see {@link MainThreadTurns}. */
const LIGHT_SHARE = 1 / 16;

/**
 * The main thread's inline turns, shared by every deployment in the process (the main thread is
 * one). Queues with entries wait for the end of the event loop's turn (`setImmediate`); then they
 * run, those of the deployments that used the least inline CPU recently first, until the turn has
 * lasted {@link LIMITS.inlineTurnMs}. After that, a queue whose entries are known to be light
 * (a sixteenth of that budget or less) still gets one entry in, for another budget counted from
 * then; the others wait for the next turn, after the event loop has read the sockets again. So
 * however many deployments have inline work, one turn holds the main thread for about two budgets
 * plus two entries (each at most a slice: the entry that ran over the turn's budget, and a light
 * queue's last, should it have turned heavy), and a light tenant's entry goes in the turn after its request,
 * even while new deployments, whose cost is not known yet (and who therefore go first: they used
 * nothing lately), take a turn each.
 */
export class MainThreadTurns {
  private static instance: MainThreadTurns | undefined;
  private readonly waiting = new Set<TurnRunner>();
  private scheduled = false;

  constructor(
    /** The clock turns are timed on (ms); tests pass one they move themselves. */
    private readonly now: () => number = () => performance.now(),
  ) {}

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
    const runners = [...this.waiting]
      .map((runner) => ({ runner, recentNs: runner.recentNs() }))
      .sort((a, b) => a.recentNs - b.recentNs)
      .map(({ runner }) => runner);
    const untilMs = this.now() + LIMITS.inlineTurnMs;
    const lightMs = LIMITS.inlineTurnMs * LIGHT_SHARE;
    // The light entries' own budget, counted from when the turn's ran out: counted from the turn's
    // start, one entry of a whole slice left none, and a light tenant waited behind every
    // deployment whose entries take a slice, one turn each.
    let lightUntilMs = 0;
    try {
      for (const [at, runner] of runners.entries()) {
        const now = this.now();
        let until = untilMs;
        if (at > 0 && now >= untilMs) {
          lightUntilMs ||= now + LIMITS.inlineTurnMs;
          const entryMs = runner.typicalEntryMs();
          if (entryMs === 0 || entryMs > lightMs || now >= lightUntilMs) continue;
          until = 0; // one entry
        }
        const more = runner.runUntil(until);
        this.waiting.delete(runner);
        if (more) this.waiting.add(runner);
      }
    } finally {
      if (this.waiting.size > 0) this.schedule();
    }
  };
}
