import type WebSocket from "ws";
import { dropSlowConsumer, type Outgoing, outgoingLength } from "./sync-guards.js";
import { SYNC_LIMITS } from "./sync-messages.js";

/** Unsent data above this counts against the host's total (below, 1000 sockets of an address hold 64 MiB). */
const COUNTED_BYTES = 64 * 1024;
/** How long a count of all sockets' unsent data stands, sends since added to it (ms). */
const RECOUNT_MS = 20;
/** Unsent data above this is a socket's backlog: it must be gone within {@link SYNC_LIMITS.drainMs}. */
const BACKLOG_BYTES = SYNC_LIMITS.bufferedBytes / 4;
/** The part of the host's bytes one client address's sockets may hold, and one deployment's. */
const ADDRESS_SHARE = 1 / 4;
const DEPLOYMENT_SHARE = 1 / 2;

/** Whose share a socket's unsent data counts against: its client address's and its deployment's. */
export interface SendOwners {
  address: string;
  deployment: string;
}

/** Unsent data counted: the host's, and each owner's (keys `a:<address>`, `d:<deployment>`). */
interface UnsentCount {
  bytes: number;
  byOwner: Map<string, number>;
  at: number;
}

/**
 * What a host's sync sockets may leave unsent, each and all together. Unsent data is the host's
 * memory: a socket whose client stopped reading after one large push holds it (120 such sockets
 * held 1.9 GB), and a thousand sockets each sent one 8 MiB result would hold 8 GB. Pushes that do
 * not fit wait (sync-pushes.ts holds the latest of each subscription, as the shared text); a
 * socket that keeps a backlog and sends out less than that in {@link SYNC_LIMITS.drainMs} is
 * dropped as a slow consumer. One client address's sockets may hold a quarter of the host's bytes,
 * one deployment's half: a client that opens many sockets and stops reading, or a tenant with
 * large results, holds its own pushes back, not every other tenant's.
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
  private count: UnsentCount = { bytes: 0, byOwner: new Map(), at: Number.NEGATIVE_INFINITY };
  /** Each socket's owners' keys in {@link UnsentCount.byOwner} (none: counted for the host only). */
  private readonly owners = new WeakMap<WebSocket, string[]>();

  /** `hostBytes`: what all sockets' unsent data above {@link COUNTED_BYTES} may hold together. */
  constructor(private readonly hostBytes: number = SYNC_LIMITS.hostUnsentBytes) {}

  /** Counts `ws`'s unsent data against its address's and its deployment's shares too. */
  belongs(ws: WebSocket, owners: SendOwners): void {
    this.owners.set(ws, [`a:${owners.address}`, `d:${owners.deployment}`]);
  }

  /**
   * Whether `bytes` more may go on `ws` now: its unsent data stays within
   * {@link SYNC_LIMITS.bufferedBytes} (one larger message still goes alone, to a socket that has
   * sent everything before it), the host's within its bytes, and its owners' within their shares.
   */
  fits(ws: WebSocket, bytes: number): boolean {
    const waiting = ws.bufferedAmount;
    if (waiting > 0 && waiting + bytes > SYNC_LIMITS.bufferedBytes) return false;
    if (waiting + bytes <= COUNTED_BYTES) return true;
    const count = this.unsent();
    if (count.bytes + bytes > this.hostBytes) return false;
    const [address, deployment] = this.owners.get(ws) ?? [];
    return (
      (address === undefined ||
        (count.byOwner.get(address) ?? 0) + bytes <= this.hostBytes * ADDRESS_SHARE) &&
      (deployment === undefined ||
        (count.byOwner.get(deployment) ?? 0) + bytes <= this.hostBytes * DEPLOYMENT_SHARE)
    );
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
      const added = before > COUNTED_BYTES ? Math.max(0, waiting - before) : waiting;
      this.count.bytes += added;
      for (const owner of this.owners.get(ws) ?? [])
        this.count.byOwner.set(owner, (this.count.byOwner.get(owner) ?? 0) + added);
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

  /** What the counted sockets hold unsent, all and by owner (those that sent theirs or closed are let go). */
  private unsent(): UnsentCount {
    const now = performance.now();
    if (now - this.count.at < RECOUNT_MS) return this.count;
    let bytes = 0;
    const byOwner = new Map<string, number>();
    for (const ws of this.counted) {
      const waiting = ws.readyState === ws.OPEN ? ws.bufferedAmount : 0;
      if (waiting <= COUNTED_BYTES) {
        this.counted.delete(ws);
        continue;
      }
      bytes += waiting;
      for (const owner of this.owners.get(ws) ?? []) byOwner.set(owner, (byOwner.get(owner) ?? 0) + waiting);
    }
    this.count = { bytes, byOwner, at: now };
    return this.count;
  }
}
