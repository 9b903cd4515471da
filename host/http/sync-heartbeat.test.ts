/**
 * A sync socket whose client stops answering pings is ended; one that answers stays open. Real
 * `ws` server and clients on loopback; the silent client is a `ws` client with its automatic pong
 * turned off, as a peer that vanished without closing looks to the server.
 */
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { SyncHeartbeat } from "./sync-heartbeat.js";

const PERIOD_MS = 1000;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function closed(ws: WebSocket): Promise<number> {
  return new Promise((resolve) => ws.once("close", (code) => resolve(code)));
}

describe("SyncHeartbeat", () => {
  it("ends a socket that does not answer a ping by the next one, and keeps one that does", async () => {
    const heartbeat = new SyncHeartbeat(PERIOD_MS);
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    cleanups.push(() => {
      heartbeat.stop();
      for (const client of wss.clients) client.terminate();
      wss.close();
    });
    const serverSockets: WebSocket[] = [];
    wss.on("connection", (ws) => {
      serverSockets.push(ws);
      heartbeat.watch(ws);
    });
    await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
    const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    const answering = new WebSocket(url);
    const silent = new WebSocket(url, { autoPong: false });
    await Promise.all([answering, silent].map((ws) => new Promise((resolve) => ws.once("open", resolve))));
    let pingsAnswered = 0;
    answering.on("ping", () => pingsAnswered++);

    // Terminated by the server: no close frame, so the client sees 1006.
    expect(await closed(silent)).toBe(1006);
    // The answering one went through the same beats and several more.
    const before = pingsAnswered;
    while (pingsAnswered < before + 3) await new Promise((resolve) => setTimeout(resolve, PERIOD_MS / 3));
    expect(answering.readyState).toBe(WebSocket.OPEN);
    expect(serverSockets.filter((ws) => ws.readyState === WebSocket.OPEN)).toHaveLength(1);
    answering.close();
  }, 30_000);
});
