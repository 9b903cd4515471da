import { setImmediate as nextTurn } from "node:timers/promises";
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

/** One group's outcome on its way to the group's subscribers. */
interface Delivery {
  group: Group;
  outcome: Outcome;
  /** The group's subscribers, in the order they joined (those joining meanwhile included). */
  next: Iterator<Subscriber>;
  encoded: () => Buffer;
  /** False once nobody should be given it any more (its group was dropped). */
  live: () => boolean;
  done: () => void;
  /** A subscriber's push threw: the delivery ends, and its run fails with the error. */
  fail: (error: unknown) => void;
}

/** How deliveries share the event loop: pushes for at most `ms` a turn, on the clock `now` (ms). */
export interface DeliveryBudget {
  ms: number;
  now: () => number;
}

const EIGHT_MS: DeliveryBudget = { ms: 8, now: () => performance.now() };

/**
 * Hands a shared subscription's outcome to each of its subscribers not given it yet. A value is
 * encoded as UTF-8 once, and the bytes shared by every subscriber it goes to, those joining later
 * included while some socket still holds them.
 *
 * Each push is a socket's frame, about 10 µs: 16,000 subscribers of one shared query held every
 * tenant's calls 135-171 ms a commit. So deliveries take turns: all of them together, one after
 * another in the order they came, push for at most 8 ms a turn of the event loop, then hand it
 * back, and the delivery that was cut short goes last. One budget for all matters: a budget per
 * delivery let four large groups' deliveries, resuming in the same turn, hold the event loop 67 ms.
 */
export class OutcomeDelivery {
  /** Each outcome's UTF-8 bytes while something still holds them. */
  private readonly encodedOutcomes = new WeakMap<Outcome, WeakRef<Buffer>>();
  /** Deliveries not finished, the one pushing now first. */
  private readonly queue: Delivery[] = [];
  private working = false;
  /** How long deliveries have pushed in this turn of the event loop (ms; undefined: not yet). */
  private spent: number | undefined;

  constructor(
    private readonly observer: LiveObserver,
    /** How deliveries share the event loop (tests give it a clock of their own). */
    private readonly budget: DeliveryBudget = EIGHT_MS,
  ) {}

  /**
   * Gives the group's outcome to every subscriber not given it yet, those joining meanwhile
   * included, those leaving not. Resolves once every subscriber has it, or once `live` answers
   * false or the group has another outcome (whose own delivery then reaches them). Pushes at once
   * when no other delivery is waiting for its turn.
   */
  deliver(group: Group, live: () => boolean = () => true): Promise<void> {
    const outcome = group.outcome;
    if (!outcome) return Promise.resolve();
    return new Promise((done, fail) => {
      this.queue.push({
        group,
        outcome,
        next: group.subscribers.keys(),
        encoded: this.encoder(outcome),
        live,
        done,
        fail,
      });
      if (!this.working) void this.work();
    });
  }

  /** Gives the group's outcome to `subscriber` alone (one joining), unless it has it. */
  deliverTo(group: Group, subscriber: Subscriber): void {
    const outcome = group.outcome;
    if (outcome && this.give(group, subscriber, outcome, this.encoder(outcome))) this.report(group, 1);
  }

  /** Works through the queue, taking a turn of the event loop whenever the budget is spent. */
  private async work(): Promise<void> {
    this.working = true;
    try {
      for (;;) {
        const delivery = this.queue[0];
        if (!delivery) return;
        let finished: boolean;
        try {
          finished = this.stretch(delivery);
        } catch (error) {
          this.queue.shift();
          delivery.fail(error);
          continue;
        }
        if (finished) {
          this.queue.shift();
          delivery.done();
        } else {
          this.queue.push(this.queue.shift() as Delivery);
          await nextTurn();
        }
      }
    } finally {
      this.working = false;
    }
  }

  /** Pushes `delivery` until it is finished (true) or this turn's budget is spent (false). */
  private stretch(delivery: Delivery): boolean {
    const { group, outcome } = delivery;
    const started = this.budget.now();
    const left = this.budget.ms - this.spentInTurn();
    let pushed = 0;
    try {
      for (;;) {
        if (group.outcome !== outcome || !delivery.live()) return true;
        if (this.budget.now() - started >= left) return false;
        const next = delivery.next.next();
        if (next.done) return true;
        if (this.give(group, next.value, outcome, delivery.encoded)) pushed++;
      }
    } finally {
      this.spent = this.spentInTurn() + (this.budget.now() - started);
      this.report(group, pushed);
    }
  }

  /**
   * How long deliveries have pushed in this turn of the event loop, all of them together (those
   * that finished and those started afresh after them included). Only pushing counts: the
   * queries' runs between deliveries have bounds of their own, and counting them made deliveries
   * wait for the next turn, holding their runs' places in the re-run queue.
   */
  private spentInTurn(): number {
    if (this.spent === undefined) {
      this.spent = 0;
      // Scheduled before any delivery's own next turn, so it runs first there.
      setImmediate(() => {
        this.spent = undefined;
      });
    }
    return this.spent;
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
