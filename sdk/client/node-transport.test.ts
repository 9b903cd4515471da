/**
 * nodeFetch against a real loopback server that takes requests and never answers: a call's abort
 * (its time ran out, see within-time.ts) ends the request and frees the connection.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { expect, it } from "vitest";
import { nodeFetch, nodeTransport } from "./node-transport.js";

it("an aborted request to a *.localhost host that never answers rejects and closes its connection", async () => {
  let arrived: (request: IncomingMessage) => void = () => {};
  const arrival = new Promise<IncomingMessage>((resolve) => (arrived = resolve));
  const server = createServer((request) => arrived(request));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const controller = new AbortController();
    const answer = nodeFetch(`http://app.localhost:${port}/api/query/list`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
      signal: controller.signal,
    });
    const request = await arrival;
    const closed = new Promise<void>((resolve) => request.socket.once("close", () => resolve()));
    controller.abort(new Error("no answer within 60 s"));
    await expect(answer).rejects.toThrow();
    await closed;
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 10_000);

it("a socket whose host never answers its handshake closes after the handshake's time", async () => {
  const server = createServer(() => {});
  const upgrades: Duplex[] = [];
  server.on("upgrade", (_request, socket: Duplex) => upgrades.push(socket)); // never answered
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const socket = nodeTransport(200).socket(`ws://app.localhost:${port}/api/sync`, ["platform.sync.v1"]);
    const closed = new Promise<void>((resolve) => {
      socket.onclose = () => resolve();
    });
    socket.onerror = () => {};
    await closed;
  } finally {
    for (const upgrade of upgrades) upgrade.destroy();
    for (const upgrade of upgrades) upgrade.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 10_000);
