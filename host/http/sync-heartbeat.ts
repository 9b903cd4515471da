import type WebSocket from "ws";
import { SYNC_LIMITS } from "./sync-messages.js";

/**
 * Pings every watched sync socket each period and ends one that has not answered the previous
 * ping. A client gone without closing (a laptop shut, a phone out of range, a NAT that forgot the
 * connection) would otherwise keep its subscriptions re-running and its pushes queued until TCP
 * gives up, hours later. Browsers and `ws` answer pings by themselves; one timer serves all sockets.
 */
export class SyncHeartbeat {
  /** Each socket watched, and whether a ping to it is still unanswered. */
  private readonly awaiting = new Map<WebSocket, boolean>();
  private readonly timer: NodeJS.Timeout;

  constructor(periodMs: number = SYNC_LIMITS.pingEveryMs) {
    this.timer = setInterval(() => this.beat(), periodMs);
    this.timer.unref();
  }

  /** Watches `ws` until it closes. */
  watch(ws: WebSocket): void {
    this.awaiting.set(ws, false);
    ws.on("pong", () => {
      if (this.awaiting.has(ws)) this.awaiting.set(ws, false);
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
      this.awaiting.set(ws, true);
      // A socket closing already cannot be pinged; its close event ends the watch.
      if (ws.readyState === ws.OPEN) ws.ping();
    }
  }

  /** Stops pinging (the endpoint stopped). */
  stop(): void {
    clearInterval(this.timer);
    this.awaiting.clear();
  }
}
