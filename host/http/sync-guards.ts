import type { Duplex } from "node:stream";
import type WebSocket from "ws";
import type { BodyArrival } from "./body-arrivals.js";
import { SYNC_LIMITS } from "./sync-messages.js";

/**
 * What a client address's sync messages may bring: {@link SYNC_LIMITS.inboundBytesPerSecond},
 * after a burst of {@link SYNC_LIMITS.inboundBurstBytes}, each message counting
 * {@link SYNC_LIMITS.inboundMessageBytes} at least. Every message is parsed on the host's main
 * thread, the ones no quota charges too (an unsubscribe, a malformed one): 240 KB unsubscribes
 * at 157 a second from one socket held that thread 98% busy, and every tenant's calls with it.
 */
export class InboundBudget {
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

/** How often (ms) at most those are looked for while fewer than twice the last look's remain. */
const SWEEP_EVERY_MS = 60_000;

/**
 * Each client address's {@link InboundBudget}, shared by its sockets, and kept after they close
 * until it is whole again: closing and opening sockets does not renew it.
 */
export class InboundBudgets {
  private readonly byClient = new Map<string, InboundBudget>();
  /**
   * How many are remembered before the next look for ones to forget: twice what the last look
   * kept. Addresses with sockets open are kept, and with thousands of them every open looked at
   * all of them (0.74 ms an open with 65,536; an attack review, 2026-12-06).
   */
  private sweepAt = REMEMBERED;
  /** When it last looked (ms): it looks again past a minute too, so that a peak's leftovers go. */
  private sweptAt = 0;

  /** `enabled` false: no budget (a host without request quotas, such as a benchmark's). */
  constructor(private readonly enabled: boolean) {}

  /** A socket of `client` opened: how it takes what each of its messages costs. */
  open(client: string): (bytes: number) => boolean {
    if (!this.enabled) return () => true;
    const size = this.byClient.size;
    if (size > this.sweepAt || (size > REMEMBERED && performance.now() - this.sweptAt > SWEEP_EVERY_MS)) {
      for (const [address, kept] of this.byClient)
        if (kept.sockets <= 0 && kept.full()) this.byClient.delete(address);
      this.sweepAt = Math.max(REMEMBERED, 2 * this.byClient.size);
      this.sweptAt = performance.now();
    }
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
 * Counts what arrives on `socket`, `ws`'s own, against `arrival` (a share of the host's body
 * arrivals, the limits request bodies arriving have) from the moment it arrives until the message
 * it belongs to is whole: `ws` holds an unfinished message, up to its 1 MiB, for as long as its
 * sender takes, and the budgets above count only whole ones. Found by review: a thousand sockets
 * from one address, each a byte short of a 1 MiB message and answering pings, held 1 GiB. Past a
 * limit `ws` is closed (1008); dropped for another address's room, it is ended at once. Counted
 * before `ws` reads a chunk, so a chunk that also starts the next message counts only until the
 * message it ends is whole: at most one chunk a socket goes uncounted.
 */
export function countArrivingBytes(ws: WebSocket, socket: Duplex, arrival: BodyArrival): void {
  socket.prependListener("data", (chunk: Buffer) => {
    const refused = arrival.take(chunk.length);
    if (!refused) return;
    arrival.end();
    ws.close(
      1008,
      refused.code === "unavailable" ? "host receiving all it holds" : "too many bytes arriving",
    );
    // At once: a sender that went on for a second after its refusal held its bytes uncounted.
    ws.terminate();
  });
  ws.on("message", () => arrival.end());
  // A ping or pong between messages ends what came before it too: an idle subscriber's pongs, 14
  // bytes every 30 s, stayed counted until its next message, and made it look stood still (found
  // by the fixes' review). Not between a message's fragments: a pong there would reset the count.
  const betweenMessages = () =>
    (ws as unknown as { _receiver?: { _fragmented?: number } })._receiver?._fragmented === 0;
  for (const control of ["ping", "pong"] as const)
    ws.on(control, () => {
      if (betweenMessages()) arrival.end();
    });
  ws.once("close", () => arrival.end());
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

/** How long a socket closed by the host may take to answer the close before it is cut (ms). */
const CLOSE_ANSWER_MS = 1000;

/**
 * Closes `ws` with `code` and `reason`, and cuts it if the client does not answer within
 * {@link CLOSE_ANSWER_MS}: until its close ends, a socket keeps its subscriptions running (as an
 * identity that ended, or for a deployment that is gone), and a client that never answers held
 * them for `ws`'s 30 s.
 */
export function closeFirmly(ws: WebSocket, code: number, reason: string): void {
  ws.close(code, reason);
  setTimeout(() => {
    if (ws.readyState !== ws.CLOSED) ws.terminate();
  }, CLOSE_ANSWER_MS).unref();
}

/** Closes `ws` as a slow consumer, at once. */
export function dropSlowConsumer(ws: WebSocket): void {
  ws.close(1013, "slow consumer");
  ws.terminate();
}
