import type { Group, Outcome } from "./group.js";

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

  constructor(private readonly observer: LiveObserver) {}

  /** Gives the group's outcome to every subscriber that was not given it yet. */
  deliver(group: Group): void {
    const outcome = group.outcome;
    if (!outcome) return;
    let pushed = 0;
    let bytes: Buffer | undefined;
    const encoded = () => {
      bytes ??= this.bytesOf(outcome);
      return bytes;
    };
    for (const [subscriber, seen] of group.subscribers) {
      if (seen === outcome) continue;
      group.subscribers.set(subscriber, outcome);
      pushed++;
      if (outcome.error) subscriber.error(outcome.error);
      else subscriber.value(outcome.valueJson as string, encoded);
    }
    if (pushed > 0) this.observer.pushed(group.deployment, pushed);
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
