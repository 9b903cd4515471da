import { createHash } from "node:crypto";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";

/** A failed run as subscribers see it. */
export interface QueryFailure {
  code: string;
  message: string;
}

/**
 * Receives a subscription's outcomes: the current one once when it joins, then each new one.
 * An error is an outcome like a value: a later success replaces it (even with the old value).
 */
export interface Subscriber {
  /**
   * The query's result (JSON) is now this; `encoded` gives it as UTF-8 bytes, encoded once for
   * every subscriber it is handed to.
   */
  value(valueJson: string, encoded: () => Buffer): void;
  /** The query now fails; it runs again when what it read changes. */
  error(error: QueryFailure): void;
  /**
   * Who subscribed (the client's address): a shared subscription's bytes count against the share
   * of the caller that started it, or of one still subscribed once that caller left. Unset: one
   * caller for all.
   */
  readonly caller?: string;
  /**
   * What it belongs to (a socket): a mutation's answer there waits for its owner's subscriptions
   * only (see `LiveQueries.settledFor`). Unset: one owner for all.
   */
  readonly owner?: object;
}

/** The latest outcome of a shared subscription: exactly one of the two is set. Never mutated. */
export interface Outcome {
  valueJson?: string;
  error?: QueryFailure;
}

/**
 * One shared subscription (same query, arguments and caller): its latest outcome, its subscribers,
 * the run due for it, and the callers waiting for its next run (see {@link nextRunOf}).
 */
export interface Group {
  deployment: string;
  name: string;
  argsJson: string;
  identity: BridgeIdentity | null;
  /** The incarnation its subscribers' identity was checked for (see `Call.incarnation`). */
  incarnation: string | null | undefined;
  /** Whose share what it holds counts against (see {@link Subscriber.caller}). */
  caller: string;
  outcome?: Outcome;
  /** Each subscriber with the outcome it was last given (undefined: nothing yet). */
  subscribers: Map<Subscriber, Outcome | undefined>;
  /** Set from the moment a run is asked for (it may wait for its turn) until none is due. */
  running?: Promise<void> | undefined;
  /** A run is executing now (not merely waiting for its turn). */
  executing: boolean;
  /** A commit came while it executed: it runs once more. */
  dirty: boolean;
  /** Executions started, and finished (their outcome delivered), over the group's life. */
  started: number;
  finished: number;
  /** Callers waiting for the execution numbered `need` to finish (see {@link nextRunOf}). */
  waiters: Array<{ need: number; resolve: () => void }>;
  /**
   * Set when its last run did not fit in its deployment's live state: the bytes that run would
   * have held. It runs again once that much room is free, or in turn as writes come.
   */
  roomNeeded?: number | undefined;
  /** Set while its outcome is a refusal of the moment: when it runs again (see `LiveQueries`). */
  retryTimer?: NodeJS.Timeout | undefined;
}

/**
 * Resolves once `group` has finished an execution that started after this call: the one waiting
 * for its turn, or, when one is executing now (read before a commit that made it dirty), the one
 * after it; or once no run is due for it any more. With `current`, the execution under way counts
 * too (a subscriber joining it is handed its outcome: see `OutcomeDelivery`).
 */
export function nextRunOf(group: Group, current = false): Promise<void> {
  const need = current && group.executing ? group.started : group.started + 1;
  return new Promise((resolve) => group.waiters.push({ need, resolve }));
}

/** Resolves the waiters of `group` whose execution finished, or all of them once it has none due. */
export function wakeWaiters(group: Group, all: boolean): void {
  if (group.waiters.length === 0) return;
  const due = all ? group.waiters : group.waiters.filter((waiter) => waiter.need <= group.finished);
  group.waiters = all ? [] : group.waiters.filter((waiter) => waiter.need > group.finished);
  for (const waiter of due) waiter.resolve();
}

/**
 * The key of the group of `name` with `argsJson` as `identity` on `deployment`. Hashed: the group
 * keeps its arguments once; a key holding them escaped kept them twice.
 */
export function groupKey(
  deployment: string,
  name: string,
  argsJson: string,
  identity: BridgeIdentity | null,
  incarnation?: string | null,
): string {
  return createHash("sha256")
    .update(
      JSON.stringify([
        deployment,
        name,
        argsJson,
        identity?.userId ?? null,
        identity?.kind ?? null,
        identity?.email ?? null,
        // User ids are the same in each incarnation of an id: sockets of two never share a group.
        incarnation,
      ]),
    )
    .digest("base64");
}

/** A group nobody has run yet, charged to `caller`. */
export function newGroup(
  deployment: string,
  name: string,
  argsJson: string,
  identity: BridgeIdentity | null,
  caller: string,
  incarnation?: string | null,
): Group {
  return {
    deployment,
    name,
    argsJson,
    identity,
    incarnation,
    caller,
    subscribers: new Map(),
    executing: false,
    dirty: false,
    started: 0,
    finished: 0,
    waiters: [],
  };
}

/** The clients subscribed to `group` (see {@link Subscriber.caller}), each once, oldest first. */
export function subscribingCallers(group: Group): string[] {
  const callers = new Set<string>();
  for (const subscriber of group.subscribers.keys()) callers.add(subscriber.caller ?? "");
  return [...callers];
}
