/**
 * buildClient on a stand-in transport: arguments that do not turn into JSON fail at once with
 * `bad_request`, over HTTP and over the socket, and nothing is sent or left waiting.
 */
import { expect, it } from "vitest";
import { isPlatformError } from "../values/index.js";
import { buildClient } from "./client.js";
import { memoryStore, type SocketLike, type Transport } from "./transport.js";

/** A transport whose host answers every request `{ value: null }` and whose socket opens at once. */
function standIn() {
  const requests: string[] = [];
  const sent: string[] = [];
  const transport: Transport = {
    fetch: async (url) => {
      requests.push(url);
      return new Response(JSON.stringify({ value: null }), {
        headers: { "content-type": "application/json" },
      });
    },
    socket: (_url: string) => {
      const socket: SocketLike = {
        readyState: 0,
        send: (data) => sent.push(data),
        close: () => {},
        onopen: null,
        onmessage: null,
        onclose: null,
        onerror: null,
      };
      setTimeout(() => {
        (socket as { readyState: number }).readyState = 1;
        socket.onopen?.({});
      }, 0);
      return socket;
    },
    store: memoryStore(),
  };
  return { transport, requests, sent };
}

const unsendable: Array<[string, unknown]> = [
  ["a function", () => ({ id: 1 })],
  ["a toJSON giving undefined", { toJSON: () => undefined }],
  ["a BigInt", { n: 1n }],
  [
    "a cycle",
    (() => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      return cyclic;
    })(),
  ],
];

const badRequest = (error: unknown) =>
  isPlatformError(error, "bad_request") && /do not turn into JSON .*pass a plain object/.test(error.message);

for (const [what, args] of unsendable) {
  it(`arguments with ${what} fail at once with bad_request, over HTTP and over the socket`, async () => {
    const host = standIn();
    const client = buildClient("http://app.localhost", host.transport, null, { guest: false });
    await expect(client.query("list", args as never)).rejects.toSatisfy(badRequest);
    await expect(client.mutation("add", args as never)).rejects.toSatisfy(badRequest);
    expect(host.requests).toEqual([]);
    expect(() => client.subscribe("list", args as never, () => {})).toThrow(
      expect.objectContaining({ code: "bad_request" }),
    );
    // With a live subscription the mutation would go over the socket; it never does.
    const open = new Promise<void>((resolve) =>
      client.onConnectionStateChange((state) => state === "open" && resolve()),
    );
    client.subscribe("list", {}, () => {});
    await open;
    const before = host.sent.length;
    await expect(client.mutation("add", args as never)).rejects.toSatisfy(badRequest);
    expect(host.sent.length).toBe(before);
    expect(host.sent.some((message) => message.includes('"args":undefined'))).toBe(false);
    client.close();
  });
}
