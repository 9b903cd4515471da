import { randomBytes } from "node:crypto";
import type WebSocket from "ws";
import { SYNC_LIMITS } from "./sync-messages.js";

/**
 * Pings every watched sync socket each period and ends one that has not answered the previous
 * ping. A client gone without closing (a laptop shut, a phone out of range, a NAT that forgot the
 * connection) would otherwise keep its subscriptions re-running and its pushes queued until TCP
 * gives up, hours later. Browsers and `ws` answer pings by themselves; one timer serves all sockets.
 * Each ping carries a random payload of its socket's own, and only a pong echoing it counts: a
 * ping queues behind the data waiting for the client, so a client that stopped reading cannot
 * keep its socket with pongs sent unasked.
 */
export class SyncHeartbeat {
  /** Each socket watched, and the payload of its ping still unanswered (undefined: none). */
  private readonly awaiting = new Map<WebSocket, Buffer | undefined>();
  private readonly timer: NodeJS.Timeout;

  constructor(periodMs: number = SYNC_LIMITS.pingEveryMs) {
    this.timer = setInterval(() => this.beat(), periodMs);
    this.timer.unref();
  }

  /** Watches `ws` until it closes. */
  watch(ws: WebSocket): void {
    this.awaiting.set(ws, undefined);
    ws.on("pong", (data: Buffer) => {
      if (this.awaiting.get(ws)?.equals(data)) this.awaiting.set(ws, undefined);
    });
    ws.once("close", () => this.awaiting.delete(ws));
  }

  private beat(): void {
    for (const [ws, unanswered] of this.awaiting) {
      if (unanswered) {
        this.awaiting.delete(ws);
        ws.terminate();
        continue;
      }
      const payload = randomBytes(8);
      this.awaiting.set(ws, payload);
      // A socket closing already cannot be pinged; its close event ends the watch.
      if (ws.readyState === ws.OPEN) ws.ping(payload);
    }
  }

  /** Stops pinging (the endpoint stopped). */
  stop(): void {
    clearInterval(this.timer);
    this.awaiting.clear();
  }
}
