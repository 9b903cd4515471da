import type { RequestQuota } from "./request-quota.js";

/** A result waiting to be pushed. */
export interface Push {
  /** Makes its text (a value's is the shared subscription's text spliced in, made only when sent). */
  text: () => string;
  /** About how long the text is. */
  length: number;
  /** Whether the subscription it is for is still the one of its id (an id may be used again). */
  current: () => boolean;
}

/** Pushes waiting for room on the socket, or on the host, try again after this, doubling to a second (ms). */
const ROOM_RETRY_MS = 50;
const ROOM_RETRY_MAX_MS = 1000;

/**
 * The results pushed to one sync socket, each costing its caller one request. One goes at once
 * while the quota allows and it fits in what the socket and the host may leave unsent
 * (`SendLimits`); else it waits, only the latest of each subscription, as the function that makes
 * its text (no copy per socket), and goes as the quota refills and the data drains. One whose
 * subscription ended is dropped.
 */
export class SocketPushes {
  private readonly held = new Map<string, Push>();
  private timer: NodeJS.Timeout | undefined;
  /** The wait before the next try for room (see {@link ROOM_RETRY_MS}). */
  private roomRetry = ROOM_RETRY_MS;

  constructor(
    private readonly quota: RequestQuota,
    /** The caller's quota key. */
    private readonly key: string,
    /** Sends a text on the socket (nothing once it is closed). */
    private readonly send: (text: string) => void,
    /** Whether `length` more may go on the socket now. */
    private readonly fits: (length: number) => boolean,
    /** Whether the socket is still open. */
    private readonly socketOpen: () => boolean,
  ) {}

  /** A result of subscription `id`; an error is one too, and replaces a value held for it. */
  push(id: string, push: Push): void {
    if (!push.current()) return;
    if (this.held.size === 0 && this.fits(push.length) && this.quota.tryTake(this.key)) {
      this.send(push.text());
      return;
    }
    this.held.delete(id);
    this.held.set(id, push);
    this.timer ??= setTimeout(() => this.flush(), this.quotaWait());
  }

  /**
   * Sends the held results in order. `forced` (before a mutation's answer, which must come after
   * them): all of them, uncharged. Else while each fits and the quota allows; answers what it
   * stopped for.
   */
  sendHeld(forced: boolean): "room" | "quota" | undefined {
    for (const [id, push] of this.held) {
      if (!push.current()) {
        this.held.delete(id);
        continue;
      }
      if (!forced && !this.fits(push.length)) return "room";
      if (!forced && !this.quota.tryTake(this.key)) return "quota";
      this.held.delete(id);
      this.send(push.text());
    }
    return undefined;
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
    const before = this.held.size;
    const stopped = this.sendHeld(false);
    if (this.held.size < before) this.roomRetry = ROOM_RETRY_MS;
    if (this.held.size === 0 || !this.socketOpen()) return;
    let wait = this.quotaWait();
    if (stopped === "room") {
      wait = this.roomRetry;
      this.roomRetry = Math.min(ROOM_RETRY_MAX_MS, this.roomRetry * 2);
    }
    this.timer = setTimeout(() => this.flush(), wait);
  }

  private quotaWait(): number {
    return Math.max(10, this.quota.waitMs(this.key));
  }
}
