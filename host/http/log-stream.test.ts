/**
 * Log streams paced by their clients: the kept lines are written as the client reads, a follower
 * that stops reading is ended past its unread share, and one caller has so many streams at once.
 * 100 unread streams of a deployment with 24 MB of log took the host from 0.3 to 3.4 GB before.
 */
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import type { Readable } from "node:stream";
import Koa from "koa";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { LogHub, type LogLine } from "../deployments/index.js";
import { streamLogs } from "./log-stream.js";

let hub: LogHub;
let server: Server;
let bodies: Readable[];
let sockets: Socket[];

const line = (message: string): LogLine => ({
  time: new Date(0).toISOString(),
  level: "info",
  deployment: "d",
  handler: "h",
  requestId: "r",
  message,
});

beforeEach(async () => {
  hub = new LogHub(false);
  bodies = [];
  sockets = [];
  const app = new Koa();
  app.silent = true;
  app.use(async (ctx) => {
    try {
      streamLogs(ctx, hub, "d", async () => true, "developer:one");
      bodies.push(ctx.body as Readable);
    } catch (error) {
      ctx.status = isPlatformError(error) ? 429 : 500;
      ctx.body = "refused";
    }
  });
  server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});

/** Opens `GET /?follow=1` and never reads past the first bytes; resolves once they came. */
function unread(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1", () =>
      socket.write("GET /?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n"),
    );
    sockets.push(socket);
    socket.once("data", () => {
      socket.pause();
      resolve(socket);
    });
    socket.on("error", reject);
  });
}

it("writes the kept lines as its client reads them, not all into its own buffer", async () => {
  // Characters JSON escapes six times over: 4 M kept characters are 24 MB of answer.
  for (let i = 0; i < 1000; i++) hub.write(line("\u0001".repeat(4000)));
  await unread();
  await vi.waitFor(() => expect(bodies).toHaveLength(1));
  await new Promise((resolve) => setTimeout(resolve, 100));
  // The stream holds about its high-water mark of them, whatever the socket's buffers took.
  const body = bodies[0] as Readable & { writableLength?: number };
  expect(body.readableLength + (body.writableLength ?? 0)).toBeLessThan(256 * 1024);
});

it("ends a follower whose new lines stay unread past its share, saying why in a last line", async () => {
  hub.write(line("first"));
  const socket = await unread();
  await vi.waitFor(() => expect(bodies).toHaveLength(1));
  const body = bodies[0] as Readable;
  // The socket's buffers take some; past them and the unread share, the stream stops following.
  let written = 0;
  while (body.readableLength <= LIMITS.logFollowUnreadBytes && written < 64 * 1024 * 1024) {
    hub.write(line("y".repeat(4000)));
    written += 4000;
    await new Promise((resolve) => setImmediate(resolve));
  }
  // Still past it at the next look: ended, the lines it took still sent, then the notice.
  const ended = new Promise((resolve) => body.once("end", resolve));
  const received: Buffer[] = [];
  await new Promise((resolve) => setTimeout(resolve, 3 * LIMITS.logFollowLookMs));
  hub.write(line("after the end"));
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  socket.resume();
  await ended;
  await vi.waitFor(() => expect(Buffer.concat(received).toString()).toContain("stopped following"));
  expect(Buffer.concat(received).toString()).not.toContain("after the end");
});

it("keeps following a client that reads, through one call's burst of lines past the share", async () => {
  hub.write(line("first"));
  const port = (server.address() as AddressInfo).port;
  const response = await fetch(`http://127.0.0.1:${port}/?follow=1`);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let text = "";
  const reading = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      text += Buffer.from(value).toString();
    }
  })();
  // 100 lines of 20 KB at once, as one call's logs arrive: past the 1 MiB share for a moment.
  for (let i = 0; i < 100; i++) hub.write(line("z".repeat(20_000)));
  await new Promise((resolve) => setTimeout(resolve, 3 * LIMITS.logFollowLookMs));
  hub.write(line("still followed"));
  await vi.waitFor(() => expect(text).toContain("still followed"));
  expect(text).not.toContain("stopped following");
  await reader.cancel();
  await reading.catch(() => {});
});

it(`refuses a caller's stream past ${LIMITS.logStreamsPerCaller} open at once, and takes one again once one closed`, async () => {
  hub.write(line("kept"));
  const open: Socket[] = [];
  for (let i = 0; i < LIMITS.logStreamsPerCaller; i++) open.push(await unread());
  const refused = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  expect(refused.status).toBe(429);
  open[0]?.destroy();
  await vi.waitFor(async () => {
    const again = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    expect(again.status).toBe(200);
    await again.text();
  });
});
