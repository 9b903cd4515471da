/**
 * What all of a host's sync sockets leave unsent together is bounded: clients that stop reading
 * after one large push each would otherwise hold it in the host's memory (a thousand 8 MiB pushes,
 * 8 GB). Real `ws` server and clients on loopback; the slow clients pause their sockets.
 */
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { RequestQuota } from "./request-quota.js";
import { SocketPushes } from "./sync-pushes.js";
import { SendLimits } from "./sync-send-limits.js";

const MiB = 1024 * 1024;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A loopback `ws` server and `count` clients; answers the clients and the server's sockets, in order. */
async function connected(count: number): Promise<{ clients: WebSocket[]; sockets: WebSocket[] }> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  cleanups.push(() => {
    for (const client of wss.clients) client.terminate();
    wss.close();
  });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  const clients: WebSocket[] = [];
  const sockets: WebSocket[] = [];
  for (let i = 0; i < count; i++) {
    const accepted = new Promise<WebSocket>((resolve) => wss.once("connection", resolve));
    const client = new WebSocket(url);
    await new Promise((resolve) => client.once("open", resolve));
    clients.push(client);
    sockets.push(await accepted);
  }
  return { clients, sockets };
}

describe("SendLimits.send", () => {
  it("sends a value spliced between its framing as one text message, its bytes shared by every socket", async () => {
    const limits = new SendLimits(40 * MiB);
    const { clients, sockets } = await connected(3);
    const value = JSON.stringify({ text: "é ✓ 𝄞".repeat(100_000) });
    const shared = Buffer.from(value);
    const received = clients.map(
      (client) =>
        new Promise<{ text: string; binary: boolean }>((resolve) =>
          client.once("message", (data, binary) => resolve({ text: String(data), binary })),
        ),
    );
    sockets.forEach((socket, i) => {
      limits.send(socket, { before: `{"type":"value","id":"s${i}","value":`, shared, after: "}" });
    });
    const messages = await Promise.all(received);
    messages.forEach((message, i) => {
      expect(message.binary).toBe(false);
      expect(JSON.parse(message.text)).toEqual({ type: "value", id: `s${i}`, value: JSON.parse(value) });
    });
  });
});

describe("SocketPushes within SendLimits", () => {
  it("holds a push that does not fit until the data drains, instead of dropping the socket, and a mutation's answer behind it", async () => {
    const limits = new SendLimits(40 * MiB);
    const { clients, sockets } = await connected(2);
    const [slow, other] = clients as [WebSocket, WebSocket];
    const [first, second] = sockets as [WebSocket, WebSocket];
    const paused = (slow as unknown as { _socket: Socket })._socket;
    paused.pause();
    const big = "x".repeat(32 * MiB);
    limits.send(first, big);
    // The host holds more than 8 MiB of it unsent: another large push waits, its socket stays.
    const received: string[] = [];
    other.on("message", (data) => received.push(String(data)));
    const pushes = new SocketPushes(
      new RequestQuota(false),
      "caller",
      (text) => limits.send(second, text),
      (length) => limits.fits(second, length),
      () => second.readyState === WebSocket.OPEN,
      () => second.terminate(),
    );
    pushes.push("s1", { message: () => big, length: big.length, current: () => true });
    // A small one for another subscription queues behind it, in order.
    pushes.push("s2", { message: () => "small", length: 5, current: () => true });
    // A mutation's answer comes after the results held when it came (read-your-writes), even when
    // one of them is replaced by a newer value meanwhile.
    pushes.reply("answer", true);
    const newer = "y".repeat(32 * MiB);
    pushes.push("s1", { message: () => newer, length: newer.length, current: () => true });
    expect(second.bufferedAmount).toBe(0);
    expect(second.readyState).toBe(WebSocket.OPEN);
    // The slow client reads again: the held push goes out.
    paused.resume();
    while (received.length < 3) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(received.map((text) => (text.length > 100 ? `${text[0]} x ${text.length}` : text))).toEqual([
      `y x ${newer.length}`,
      "small",
      "answer",
    ]);
    expect(second.readyState).toBe(WebSocket.OPEN);
  }, 30_000);
});

describe("SendLimits", () => {
  it("drops a socket whose push would take all backlogs past the host's bytes, and sends small pushes as before", async () => {
    // A message larger than the kernel's buffers on both ends take: most of it stays unsent.
    const big = "x".repeat(32 * MiB);
    const limits = new SendLimits(40 * MiB);
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    cleanups.push(() => {
      for (const client of wss.clients) client.terminate();
      wss.close();
    });
    const serverSockets: WebSocket[] = [];
    wss.on("connection", (ws) => serverSockets.push(ws));
    await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
    const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    const clients = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<WebSocket>((resolve) => {
            const ws = new WebSocket(url);
            ws.once("open", () => resolve(ws));
          }),
      ),
    );
    while (serverSockets.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
    const [slow, slower, reader] = clients as [WebSocket, WebSocket, WebSocket];
    for (const client of [slow, slower]) (client as unknown as { _socket: Socket })._socket.pause();
    const closed = (ws: WebSocket) =>
      new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
    const [first, second, third] = serverSockets as [WebSocket, WebSocket, WebSocket];
    const secondClosed = closed(second);

    limits.send(first, big);
    expect(first.bufferedAmount).toBeGreaterThan(8 * MiB);
    // The second large push would hold more than 40 MiB unsent on the host: its socket is dropped.
    limits.send(second, big);
    expect(await secondClosed).toBe(1006);
    expect(first.readyState).toBe(WebSocket.OPEN);
    // Small pushes leave no backlog: they go out whatever the others hold.
    const got = new Promise<string>((resolve) => reader.once("message", (data) => resolve(String(data))));
    limits.send(third, "small");
    expect(await got).toBe("small");
    expect(third.readyState).toBe(WebSocket.OPEN);
  }, 30_000);
});

describe("SendLimits shares", () => {
  it("lets one client address hold a quarter of the host's bytes and one deployment half, so others' pushes still go", async () => {
    const limits = new SendLimits(160 * MiB);
    const { clients, sockets } = await connected(5);
    for (const client of clients) (client as unknown as { _socket: Socket })._socket.pause();
    const [a1, a2, b, c, d] = sockets as [WebSocket, WebSocket, WebSocket, WebSocket, WebSocket];
    limits.belongs(a1, { address: "a", deployment: "x" });
    limits.belongs(a2, { address: "a", deployment: "x" });
    limits.belongs(b, { address: "b", deployment: "x" });
    limits.belongs(c, { address: "c", deployment: "y" });
    limits.belongs(d, { address: "d", deployment: "x" });
    const big = "x".repeat(32 * MiB);
    limits.send(a1, big);
    expect(a1.bufferedAmount).toBeGreaterThan(24 * MiB);
    // Address a holds most of its 40 MiB: its other socket waits; another address of x does not.
    expect(limits.fits(a2, 16 * MiB)).toBe(false);
    expect(limits.fits(b, 16 * MiB)).toBe(true);
    limits.send(b, big);
    // Deployment x holds most of its 80 MiB: a third address of it waits, deployment y does not.
    expect(limits.fits(d, 32 * MiB)).toBe(false);
    expect(limits.fits(c, 32 * MiB)).toBe(true);
    // Small pushes go whatever the shares hold.
    expect(limits.fits(a2, 1024)).toBe(true);
    for (const socket of sockets) expect(socket.readyState).toBe(WebSocket.OPEN);
  }, 30_000);
});
