import type { PlatformError } from "../values/index.js";

/** The latest outcome of a subscription: a value or an error (replaced, never mutated). */
export type QueryResult = { value: unknown } | { error: PlatformError };

/** Receives a subscription's results. */
export type SubscriptionListener = (result: QueryResult) => void;

/** One subscription of a client, shared by every listener of the same query and arguments. */
export interface Subscription {
  /** What the host knows it by now (a new one each time it subscribes again on the same socket). */
  id: string;
  name: string;
  argsJson: string;
  listeners: Set<SubscriptionListener>;
  /** Set when its message is too large to send: it has this error for good, and is never sent. */
  refused?: boolean;
  result?: QueryResult;
  resultJson?: string | undefined;
  /** Set while the last listener is gone but the server subscription is kept briefly. */
  dropTimer?: ReturnType<typeof setTimeout> | undefined;
}

/** A client's subscriptions, by query and arguments and by the id the host knows each by. */
export class SubscriptionTable {
  private readonly byQuery = new Map<string, Subscription>();
  private readonly byId = new Map<string, Subscription>();
  private nextId = 1;

  private static key(name: string, argsJson: string): string {
    return `${name}\u0000${argsJson}`;
  }

  get size(): number {
    return this.byQuery.size;
  }

  values(): IterableIterator<Subscription> {
    return this.byQuery.values();
  }

  /** The subscription to query `name` with arguments `argsJson`, if any. */
  of(name: string, argsJson: string): Subscription | undefined {
    return this.byQuery.get(SubscriptionTable.key(name, argsJson));
  }

  /** The subscription the host knows as `id` now, if any. */
  withId(id: unknown): Subscription | undefined {
    return typeof id === "string" ? this.byId.get(id) : undefined;
  }

  /** A new subscription to query `name` with arguments `argsJson`, under a new id. */
  add(name: string, argsJson: string): Subscription {
    const subscription: Subscription = { id: `s${this.nextId++}`, name, argsJson, listeners: new Set() };
    this.byQuery.set(SubscriptionTable.key(name, argsJson), subscription);
    this.byId.set(subscription.id, subscription);
    return subscription;
  }

  remove(subscription: Subscription): void {
    this.byQuery.delete(SubscriptionTable.key(subscription.name, subscription.argsJson));
    this.byId.delete(subscription.id);
  }

  /** Gives `subscription` a new id (what still comes for the old one is no longer its); returns the old. */
  renew(subscription: Subscription): string {
    const old = subscription.id;
    this.byId.delete(old);
    subscription.id = `s${this.nextId++}`;
    this.byId.set(subscription.id, subscription);
    return old;
  }
}

/**
 * Takes a value or error message's outcome as `subscription`'s result; false when it is no change
 * (the same value, or the same failure again, as a new socket subscribing afresh gets). A value
 * after an error is always a change.
 */
export function takeOutcome(
  subscription: Subscription,
  outcome: { value: unknown } | { error: PlatformError },
): boolean {
  if ("value" in outcome) {
    const json = JSON.stringify(outcome.value ?? null);
    if (json === subscription.resultJson) return false;
    subscription.resultJson = json;
    subscription.result = { value: outcome.value ?? null };
    return true;
  }
  const last = subscription.result;
  const { error } = outcome;
  if (last && "error" in last && last.error.code === error.code && last.error.message === error.message)
    return false;
  subscription.resultJson = undefined;
  subscription.result = { error };
  return true;
}
