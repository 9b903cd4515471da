import type { RequestQuota } from "./request-quota.js";

/**
 * The results pushed to one sync socket, each costing its caller one request: sent at once while
 * the quota allows, else held back, only the latest of each subscription, and sent as the quota
 * refills. A result is held as the function that makes its text (a value stays the shared
 * subscription's own text, not a copy per socket) and dropped once its subscription ends.
 */
export class SocketPushes {
  private readonly held = new Map<string, () => string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly quota: RequestQuota,
    /** The caller's quota key. */
    private readonly key: string,
    /** Sends a text on the socket (nothing once it is closed). */
    private readonly send: (text: string) => void,
    /** Whether subscription `id` is still open. */
    private readonly subscribed: (id: string) => boolean,
    /** Whether the socket is still open. */
    private readonly socketOpen: () => boolean,
  ) {}

  /** A result of subscription `id`; an error is one too, and replaces a value held for it. */
  push(id: string, text: () => string): void {
    if (!this.subscribed(id)) return;
    if (this.held.size === 0 && this.quota.tryTake(this.key)) {
      this.send(text());
      return;
    }
    this.held.delete(id);
    this.held.set(id, text);
    this.timer ??= setTimeout(() => this.flush(), this.wait());
  }

  /** Sends the held results, charging each unless `charge` is false (read-your-writes goes first). */
  sendHeld(charge: boolean): void {
    for (const [id, text] of this.held) {
      if (charge && !this.quota.tryTake(this.key)) break;
      this.held.delete(id);
      if (this.subscribed(id)) this.send(text());
    }
  }

  /** Forgets what is held for subscription `id` (it ended). */
  forget(id: string): void {
    this.held.delete(id);
  }

  /** Forgets everything (the socket closed). */
  close(): void {
    clearTimeout(this.timer);
    this.held.clear();
  }

  private flush(): void {
    this.timer = undefined;
    this.sendHeld(true);
    if (this.held.size > 0 && this.socketOpen()) this.timer = setTimeout(() => this.flush(), this.wait());
  }

  private wait(): number {
    return Math.max(10, this.quota.waitMs(this.key));
  }
}
