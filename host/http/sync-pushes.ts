import type { RequestQuota } from "./request-quota.js";
import type { Outgoing } from "./sync-guards.js";
import { SYNC_LIMITS } from "./sync-messages.js";

/** A result waiting to be pushed. */
export interface Push {
  /** Makes its message (a value's splices in the shared subscription's bytes, made only when sent). */
  message: () => Outgoing;
  /** About how long the text is. */
  length: number;
  /** Whether the subscription it is for is still the one of its id (an id may be used again). */
  current: () => boolean;
}

interface Held {
  push: Push;
  /**
   * What it costs when it goes: a request's worth the quota must have (`quota`), the same taken
   * even past what the quota has (`debt`: a result that must precede a mutation's answer), or
   * nothing (a reply, charged where it is made).
   */
  charge: "quota" | "debt" | "none";
}

/** Pushes waiting for room on the socket, or on the host, try again after this, doubling to a second (ms). */
const ROOM_RETRY_MS = 50;
const ROOM_RETRY_MAX_MS = 1000;

const always = () => true;

/**
 * What goes out on one sync socket: pushed results, each costing its caller one request and one
 * more per 64 KiB (`RequestQuota.costOf`: sending is the main thread's work per socket), and
 * replies (mutations' answers, errors). One goes at once while the quota allows and it fits in
 * what the socket and the host may leave unsent (`SendLimits`); else it waits, in order, a result
 * only as the latest of its subscription and as the function that makes its text (no copy per
 * socket), and goes as the quota refills and the data drains. A result whose subscription ended
 * is dropped. A reply comes after every result held when it came (read-your-writes; see
 * {@link SocketPushes.reply} for what they then cost); replies may wait up to {@link SYNC_LIMITS.bufferedBytes} together, and a socket
 * with more is dropped as a slow consumer.
 */
export class SocketPushes {
  private readonly held = new Map<string | symbol, Held>();
  private replyChars = 0;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (ms since epoch). */
  private timerAt = 0;
  /** The wait before the next try for room (see {@link ROOM_RETRY_MS}). */
  private roomRetry = ROOM_RETRY_MS;

  constructor(
    private readonly quota: RequestQuota,
    /** The caller's quota key. */
    private readonly key: string,
    /** Sends a message on the socket (nothing once it is closed). */
    private readonly send: (message: Outgoing) => void,
    /** Whether `length` more may go on the socket now. */
    private readonly fits: (length: number) => boolean,
    /** Whether the socket is still open. */
    private readonly socketOpen: () => boolean,
    /** Drops the socket as a slow consumer. */
    private readonly drop: () => void,
  ) {}

  /** A result of subscription `id`; an error is one too, and replaces a value held for it. */
  push(id: string, push: Push): void {
    if (!push.current()) return;
    if (
      this.held.size === 0 &&
      this.fits(push.length) &&
      this.quota.tryTake(this.key, this.quota.costOf(push.length))
    ) {
      this.send(push.message());
      return;
    }
    // The latest replaces the one held in its place, so a reply held after it still follows it.
    const held = this.held.get(id);
    // A newer result keeps its place and charge: one a mutation's answer took along still goes
    // before that answer (it shows the write too).
    if (held) held.push = push;
    else this.held.set(id, { push, charge: "quota" });
    this.schedule(this.quotaWait(push.length));
  }

  /** Whether replies wait to be sent. */
  get replying(): boolean {
    return this.replyChars > 0;
  }

  /**
   * A reply (a mutation's answer, an error), after the results held now. A mutation's answer
   * (`afterWrite`) takes them along, so the client sees the write's effects before its answer,
   * their cost taken from the quota even past what it has (the next requests wait for it); any
   * other reply goes ahead of them (it follows no write), behind other replies only. Before, every reply took them along for nothing, and
   * a client sending junk messages had its held results pushed at 7 times its quota.
   */
  reply(text: string, afterWrite = false): void {
    // Behind no other reply, one that follows no write goes now, ahead of results held for the quota.
    if ((this.held.size === 0 || (!afterWrite && this.replyChars === 0)) && this.fits(text.length)) {
      this.send(text);
      return;
    }
    if (this.replyChars > 0 && this.replyChars + text.length > SYNC_LIMITS.bufferedBytes) {
      this.close();
      this.drop();
      return;
    }
    if (afterWrite) for (const held of this.held.values()) if (held.charge === "quota") held.charge = "debt";
    this.replyChars += text.length;
    this.held.set(Symbol("reply"), {
      push: { message: () => text, length: text.length, current: always },
      charge: "none",
    });
    this.schedule(0);
  }

  /** Forgets what is held for subscription `id` (it ended). */
  forget(id: string): void {
    this.held.delete(id);
  }

  /** Forgets everything (the socket closed). */
  close(): void {
    clearTimeout(this.timer);
    this.held.clear();
    this.replyChars = 0;
  }

  /** Sends what is held, in order, while each fits and the quota allows; answers what it stopped for. */
  private sendHeld(): "room" | "quota" | undefined {
    for (const [key, { push, charge }] of this.held) {
      if (!push.current()) {
        this.held.delete(key);
        continue;
      }
      if (!this.fits(push.length)) return "room";
      const cost = this.quota.costOf(push.length);
      if (charge === "quota" && !this.quota.tryTake(this.key, cost)) return "quota";
      if (charge === "debt") this.quota.takeAsDebt(this.key, cost);
      this.held.delete(key);
      if (charge === "none") this.replyChars -= push.length;
      this.send(push.message());
    }
    return undefined;
  }

  /** Flushes after `wait` ms, or at the time already set when that is sooner (a reply goes at once). */
  private schedule(wait: number): void {
    const at = Date.now() + wait;
    if (this.timer !== undefined && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    this.timer = undefined;
    const before = this.held.size;
    const stopped = this.sendHeld();
    if (this.held.size < before) this.roomRetry = ROOM_RETRY_MS;
    if (this.held.size === 0 || !this.socketOpen()) return;
    let wait = this.quotaWait(this.held.values().next().value?.push.length ?? 0);
    if (stopped === "room") {
      wait = this.roomRetry;
      this.roomRetry = Math.min(ROOM_RETRY_MAX_MS, this.roomRetry * 2);
    }
    this.schedule(wait);
  }

  /** How long until the quota has what a push of `length` bytes costs (10 ms at least). */
  private quotaWait(length: number): number {
    return Math.max(10, this.quota.waitMs(this.key, this.quota.costOf(length)));
  }
}
