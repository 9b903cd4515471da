import { errorFromWire } from "./errors.js";
import { overMessageLimit, tooLarge } from "./message-size.js";
import { notifyEach } from "./notify-each.js";
import { retryAfterOf, SubscriptionRetries } from "./subscription-retries.js";
import {
  type QueryResult,
  type Subscription,
  type SubscriptionListener,
  SubscriptionTable,
  takeOutcome,
} from "./subscription-table.js";
import type { SocketLike } from "./transport.js";

/** How long a subscription outlives its last listener (a re-render re-subscribes in between). */
const DROP_GRACE_MS = 50;

/** What the subscriptions need of their connection's socket. */
export interface SubscriptionSocket {
  /** The socket, when one is open; null otherwise. */
  open(): SocketLike | null;
  /** Opens a socket unless one is open or on its way (it subscribes everything once open). */
  ensureConnected(): void;
}

/**
 * A sync connection's subscriptions, apart from its socket's comings and goings: one server
 * subscription per query and arguments, whatever its listeners, kept {@link DROP_GRACE_MS} past
 * the last; each sent on the open socket and on every new one, never when too large to send; a
 * value or error passed on only when it is new; and one the host refused or ended saying when to
 * try again subscribed again by itself then, under a new id, its last value shown meanwhile.
 */
export class SyncSubscriptions {
  private readonly table = new SubscriptionTable();
  private readonly retries = new SubscriptionRetries<Subscription>();

  constructor(private readonly socket: SubscriptionSocket) {}

  /** How many there are (each a query and arguments with listeners, or within its grace). */
  get size(): number {
    return this.table.size;
  }

  /** The latest result of a subscription that is active, or undefined. */
  current(name: string, argsJson: string): QueryResult | undefined {
    return this.table.of(name, argsJson)?.result;
  }

  /**
   * Subscribes to query `name` with arguments `argsJson`; `listener` gets every new outcome, value
   * or error (and the current one at once when another listener already has it). A value after an
   * error is always passed on, even when it equals the last value. Returns the unsubscribe function.
   */
  subscribe(name: string, argsJson: string, listener: SubscriptionListener): () => void {
    let subscription = this.table.of(name, argsJson);
    if (!subscription) {
      subscription = this.table.add(name, argsJson);
      if (overMessageLimit(this.subscribeMessage(subscription)))
        Object.assign(subscription, { refused: true, result: { error: tooLarge("subscription") } });
      this.sendSubscribe(subscription);
    }
    clearTimeout(subscription.dropTimer);
    subscription.dropTimer = undefined;
    subscription.listeners.add(listener);
    const joined = subscription;
    if (joined.result) notifyEach([listener], joined.result);
    return () => {
      joined.listeners.delete(listener);
      if (joined.listeners.size > 0 || joined.dropTimer) return;
      joined.dropTimer = setTimeout(() => {
        joined.dropTimer = undefined;
        if (joined.listeners.size > 0) return;
        this.retries.cancel(joined);
        this.table.remove(joined);
        this.sendNow({ type: "unsubscribe", id: joined.id });
      }, DROP_GRACE_MS);
    };
  }

  /** A socket opened: every subscription goes on it, those waiting to go again too. */
  socketOpened(): void {
    this.retries.cancelAll();
    for (const subscription of this.table.values()) this.sendSubscribe(subscription);
  }

  /** The signed-in user changed: the results of the one before are forgotten (refusals stay). */
  forgetResults(): void {
    for (const subscription of this.table.values()) {
      if (subscription.refused) continue;
      delete subscription.result;
      subscription.resultJson = undefined;
    }
  }

  /** A value or error message for subscription `message.id`, on a socket of the user signed in now. */
  receive(message: { type?: string; id?: string; value?: unknown; error?: unknown }): void {
    const subscription = this.table.withId(message.id);
    if (!subscription) return;
    let changed: boolean;
    if (message.type === "value") {
      this.retries.cancel(subscription);
      changed = takeOutcome(subscription, { value: message.value });
    } else if (message.type === "error") {
      const error = errorFromWire(message.error);
      const retryAfter = retryAfterOf(error.code, message.error);
      if (retryAfter !== undefined) {
        this.retries.schedule(subscription, retryAfter, () => this.subscribeAgain(subscription));
        // Ended for a while, as when the socket drops: its last value still shows meanwhile.
        if (subscription.result && "value" in subscription.result) return;
      }
      changed = takeOutcome(subscription, { error });
    } else return;
    const result = subscription.result;
    if (!changed || !result) return;
    notifyEach(subscription.listeners, result);
  }

  /** The connection closed for good: no timer of a subscription fires any more. */
  close(): void {
    this.retries.cancelAll();
    for (const subscription of this.table.values()) clearTimeout(subscription.dropTimer);
  }

  private subscribeMessage(subscription: Subscription): string {
    return `{"type":"subscribe","id":${JSON.stringify(subscription.id)},"name":${JSON.stringify(subscription.name)},"args":${subscription.argsJson}}`;
  }

  private sendSubscribe(subscription: Subscription): void {
    if (subscription.refused) return;
    const socket = this.socket.open();
    if (socket) socket.send(this.subscribeMessage(subscription));
    else this.socket.ensureConnected();
  }

  private sendNow(message: unknown): void {
    this.socket.open()?.send(JSON.stringify(message));
  }

  /**
   * Subscribes `subscription` again, under a new id (what still comes for the old one is not its),
   * when it is still wanted and the socket open (else the next socket subscribes it anyway).
   */
  private subscribeAgain(subscription: Subscription): void {
    if (this.table.withId(subscription.id) !== subscription || !this.socket.open()) return;
    this.sendNow({ type: "unsubscribe", id: this.table.renew(subscription) });
    this.sendSubscribe(subscription);
  }
}
