import { TurnTaker } from "../db/turn-taker.js";
import type { Group, Outcome, Subscriber } from "./group.js";

/**
 * What live queries report, for the host's metrics: an interface of this layer (the metrics
 * implement it); the default ignores it.
 */
export interface LiveObserver {
  /** `count` results (values or errors) were handed to subscribers of `deployment`. */
  pushed(deployment: string, count: number): void;
}

export const IGNORE_LIVE: LiveObserver = { pushed() {} };

/**
 * Hands a shared subscription's outcome to each of its subscribers not given it yet. A value is
 * encoded as UTF-8 once, and the bytes shared by every subscriber it goes to, those joining later
 * included while some socket still holds them.
 */
export class OutcomeDelivery {
  /** Each outcome's UTF-8 bytes while something still holds them. */
  private readonly encodedOutcomes = new WeakMap<Outcome, WeakRef<Buffer>>();

  constructor(
    private readonly observer: LiveObserver,
    /** How one delivery shares the event loop (tests give it a clock of their own). */
    private readonly turns: () => TurnTaker = () => new TurnTaker(),
  ) {}

  /**
   * Gives the group's outcome to every subscriber not given it yet, handing the event loop back
   * every few milliseconds: each push is a socket's frame, about 10 µs, and 16,000 subscribers of
   * one shared query held every tenant's calls 135-171 ms a commit. Subscribers joining meanwhile
   * are reached too, those leaving are not. Resolves once every subscriber has the outcome, or
   * once the group has a newer one (whose own delivery then reaches them).
   */
  async deliver(group: Group): Promise<void> {
    const outcome = group.outcome;
    if (!outcome) return;
    const turns = this.turns();
    const encoded = this.encoder(outcome);
    let pushed = 0;
    for (const subscriber of group.subscribers.keys()) {
      if (turns.due()) {
        this.report(group, pushed);
        pushed = 0;
        await turns.take();
        if (group.outcome !== outcome) return;
      }
      if (this.give(group, subscriber, outcome, encoded)) pushed++;
    }
    this.report(group, pushed);
  }

  /** Gives the group's outcome to `subscriber` alone (one joining), unless it has it. */
  deliverTo(group: Group, subscriber: Subscriber): void {
    const outcome = group.outcome;
    if (outcome && this.give(group, subscriber, outcome, this.encoder(outcome))) this.report(group, 1);
  }

  /** Pushes `outcome` to `subscriber` if it is still subscribed and was not given it; true if pushed. */
  private give(group: Group, subscriber: Subscriber, outcome: Outcome, encoded: () => Buffer): boolean {
    if (!group.subscribers.has(subscriber) || group.subscribers.get(subscriber) === outcome) return false;
    group.subscribers.set(subscriber, outcome);
    if (outcome.error) subscriber.error(outcome.error);
    else subscriber.value(outcome.valueJson as string, encoded);
    return true;
  }

  private report(group: Group, pushed: number): void {
    if (pushed > 0) this.observer.pushed(group.deployment, pushed);
  }

  /** `outcome`'s value as UTF-8, encoded at the first push that asks for it. */
  private encoder(outcome: Outcome): () => Buffer {
    let bytes: Buffer | undefined;
    return () => {
      bytes ??= this.bytesOf(outcome);
      return bytes;
    };
  }

  /** `outcome`'s value as UTF-8, encoded again only once nothing holds the last encoding. */
  private bytesOf(outcome: Outcome): Buffer {
    const kept = this.encodedOutcomes.get(outcome)?.deref();
    if (kept) return kept;
    const bytes = Buffer.from(outcome.valueJson ?? "");
    this.encodedOutcomes.set(outcome, new WeakRef(bytes));
    return bytes;
  }
}
