/**
 * nodeFetch against a real loopback server that takes requests and never answers: a call's abort
 * (its time ran out, see within-time.ts) ends the request and frees the connection.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { nodeFetch } from "./node-transport.js";

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
