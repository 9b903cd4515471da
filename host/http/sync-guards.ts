import type WebSocket from "ws";
import { SYNC_LIMITS } from "./sync-messages.js";

/**
 * What a client address's sync messages may bring: {@link SYNC_LIMITS.inboundBytesPerSecond},
 * after a burst of {@link SYNC_LIMITS.inboundBurstBytes}, each message counting
 * {@link SYNC_LIMITS.inboundMessageBytes} at least. Every message is parsed on the host's main
 * thread, the ones no quota charges too (an unsubscribe, a malformed one): 240 KB unsubscribes
 * at 157 a second from one socket held that thread 98% busy, and every tenant's calls with it.
 */
class InboundBudget {
  private tokens: number = SYNC_LIMITS.inboundBurstBytes;
  private at = performance.now();
  sockets = 0;

  /** Takes what a message of `bytes` costs; false when the address has spent its budget. */
  take(bytes: number): boolean {
    this.refill();
    const cost = Math.max(bytes, SYNC_LIMITS.inboundMessageBytes);
    if (cost > this.tokens) return false;
    this.tokens -= cost;
    return true;
  }

  /** True once the budget is whole again (nothing to remember of the address). */
  full(): boolean {
    this.refill();
    return this.tokens >= SYNC_LIMITS.inboundBurstBytes;
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(
      SYNC_LIMITS.inboundBurstBytes,
      this.tokens + ((now - this.at) / 1000) * SYNC_LIMITS.inboundBytesPerSecond,
    );
    this.at = now;
  }
}

/** Addresses remembered beyond which those with no socket and a whole budget are forgotten. */
const REMEMBERED = 1024;

/**
 * Each client address's {@link InboundBudget}, shared by its sockets, and kept after they close
 * until it is whole again: closing and opening sockets does not renew it.
 */
export class InboundBudgets {
  private readonly byClient = new Map<string, InboundBudget>();

  /** `enabled` false: no budget (a host without request quotas, such as a benchmark's). */
  constructor(private readonly enabled: boolean) {}

  /** A socket of `client` opened: how it takes what each of its messages costs. */
  open(client: string): (bytes: number) => boolean {
    if (!this.enabled) return () => true;
    if (this.byClient.size > REMEMBERED)
      for (const [address, kept] of this.byClient)
        if (kept.sockets <= 0 && kept.full()) this.byClient.delete(address);
    let budget = this.byClient.get(client);
    if (!budget) {
      budget = new InboundBudget();
      this.byClient.set(client, budget);
    }
    budget.sockets++;
    const taken = budget;
    return (bytes) => taken.take(bytes);
  }

  /** A socket of `client` closed. */
  close(client: string): void {
    const budget = this.byClient.get(client);
    if (budget && --budget.sockets <= 0 && budget.full()) this.byClient.delete(client);
  }
}

/**
 * Calls `handle` with each message of `ws` that `take` (its address's {@link InboundBudgets}
 * share) allows. Past the share, `ws` is closed (1008) with its reason sent first, and nothing it
 * sends meanwhile is read.
 */
export function onBudgetedMessage(
  ws: WebSocket,
  take: (bytes: number) => boolean,
  handle: (data: Buffer) => void,
): void {
  let refusing = false;
  ws.on("message", (data: Buffer) => {
    if (refusing) return;
    if (take(data.length)) {
      handle(data);
      return;
    }
    refusing = true;
    ws.close(1008, "too many messages");
    setTimeout(() => ws.terminate(), 1000).unref();
  });
}

/**
 * A message sent as it is, or a large value spliced between its own framing: the value's bytes,
 * encoded once, are shared by every socket it goes to (sent as fragments of one message), where
 * each socket made its own copies of the whole text before (20 sockets that stopped reading held
 * 20 copies of a 4 MB result, and Node's copies of each).
 */
export type Outgoing = string | { before: string; shared: Buffer; after: string };

/** About how many bytes `message` takes (a text's characters count as bytes). */
export function outgoingLength(message: Outgoing): number {
  return typeof message === "string"
    ? message.length
    : message.before.length + message.shared.length + message.after.length;
}

/** Closes `ws` as a slow consumer, at once. */
export function dropSlowConsumer(ws: WebSocket): void {
  ws.close(1013, "slow consumer");
  ws.terminate();
}

/** Unsent data above this counts against the host's total (below, 1000 sockets of an address hold 64 MiB). */
const COUNTED_BYTES = 64 * 1024;
/** How long a count of all sockets' unsent data stands, sends since added to it (ms). */
const RECOUNT_MS = 20;
/** Unsent data above this is a socket's backlog: it must be gone within {@link SYNC_LIMITS.drainMs}. */
const BACKLOG_BYTES = SYNC_LIMITS.bufferedBytes / 4;

/**
 * What a host's sync sockets may leave unsent, each and all together. Unsent data is the host's
 * memory: a socket whose client stopped reading after one large push holds it (120 such sockets
 * held 1.9 GB), and a thousand sockets each sent one 8 MiB result would hold 8 GB. Pushes that do
 * not fit wait (sync-pushes.ts holds the latest of each subscription, as the shared text); a
 * socket that keeps a backlog and sends out less than that in {@link SYNC_LIMITS.drainMs} is
 * dropped as a slow consumer.
 */
export class SendLimits {
  /** Sockets whose unsent data was above {@link COUNTED_BYTES} at their last send. */
  private readonly counted = new Set<WebSocket>();
  /** Each socket's characters sent so far, for its backlog checks. */
  private readonly sent = new WeakMap<WebSocket, number>();
  /** Sockets with a check of their backlog pending. */
  private readonly watched = new WeakSet<WebSocket>();
  /**
   * What the counted sockets held unsent when last counted, and when (ms), plus what was sent since:
   * a count walks every counted socket, so pushes waiting for room (retrying) share one for a while.
   */
  private count = { bytes: 0, at: Number.NEGATIVE_INFINITY };

  /** `hostBytes`: what all sockets' unsent data above {@link COUNTED_BYTES} may hold together. */
  constructor(private readonly hostBytes: number = SYNC_LIMITS.hostUnsentBytes) {}

  /**
   * Whether `bytes` more may go on `ws` now: its unsent data stays within
   * {@link SYNC_LIMITS.bufferedBytes} (one larger message still goes alone, to a socket that has
   * sent everything before it), and the host's within its bytes.
   */
  fits(ws: WebSocket, bytes: number): boolean {
    const waiting = ws.bufferedAmount;
    if (waiting > 0 && waiting + bytes > SYNC_LIMITS.bufferedBytes) return false;
    return waiting + bytes <= COUNTED_BYTES || this.unsent() + bytes <= this.hostBytes;
  }

  /**
   * Sends `message` on `ws` when it {@link fits}, else drops `ws` as a slow consumer (what cannot
   * wait: a mutation's answer, and the pushes that must go before it).
   */
  send(ws: WebSocket, message: Outgoing): void {
    const length = outgoingLength(message);
    if (!this.fits(ws, length)) {
      dropSlowConsumer(ws);
      return;
    }
    const before = ws.bufferedAmount;
    if (typeof message === "string") ws.send(message);
    else {
      // One text message in three fragments; the shared bytes go as they are, never copied.
      ws.send(message.before, { fin: false });
      ws.send(message.shared, { binary: false, fin: false });
      ws.send(message.after, { fin: true });
    }
    this.sent.set(ws, (this.sent.get(ws) ?? 0) + length);
    const waiting = ws.bufferedAmount;
    if (waiting > COUNTED_BYTES) {
      this.counted.add(ws);
      // Sends of one tick (a result fanned out to many sockets) count before any could drain.
      this.count.bytes += before > COUNTED_BYTES ? Math.max(0, waiting - before) : waiting;
    }
    if (waiting > BACKLOG_BYTES && !this.watched.has(ws)) this.watch(ws);
  }

  /**
   * Checks `ws` {@link SYNC_LIMITS.drainMs} from now: it is dropped when it still has a backlog
   * and less than a backlog's worth went out meanwhile (its client stopped reading, or reads a
   * trickle); one still backlogged but reading is checked again later.
   */
  private watch(ws: WebSocket): void {
    this.watched.add(ws);
    const waiting = ws.bufferedAmount;
    const sent = this.sent.get(ws) ?? 0;
    setTimeout(() => {
      this.watched.delete(ws);
      if (ws.readyState !== ws.OPEN) {
        this.counted.delete(ws);
        return;
      }
      const now = ws.bufferedAmount;
      if (now <= BACKLOG_BYTES) return;
      // Characters sent count as bytes: text beyond ASCII makes a client look slower than it is.
      const wentOut = waiting + ((this.sent.get(ws) ?? 0) - sent) - now;
      if (wentOut < BACKLOG_BYTES) dropSlowConsumer(ws);
      else this.watch(ws);
    }, SYNC_LIMITS.drainMs).unref();
  }

  /** What the counted sockets hold unsent (those that sent theirs or closed are let go). */
  private unsent(): number {
    const now = performance.now();
    if (now - this.count.at < RECOUNT_MS) return this.count.bytes;
    let bytes = 0;
    for (const ws of this.counted) {
      const waiting = ws.readyState === ws.OPEN ? ws.bufferedAmount : 0;
      if (waiting > COUNTED_BYTES) bytes += waiting;
      else this.counted.delete(ws);
    }
    this.count = { bytes, at: now };
    return bytes;
  }
}
