/**
 * The host's cap on client connections (host/http/connection-cap.ts): past it, a new connection is
 * closed as it arrives, the ones the host holds go on, and new ones are taken once some close.
 * Real host, real sockets on loopback.
 */
import { connect, createServer, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connectionCap,
  hostConnectionLimit,
  openFilesLimit,
  perAddressConnections,
} from "../host/http/connection-cap.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost({ maxConnections: 3 });
});
afterAll(() => host.dispose());

/** A connection to the host, once the kernel has accepted it. */
function opened(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** What the host answers to `GET /healthz` on `socket` (empty when it closes the connection instead). */
function healthz(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (text.includes("\r\n\r\nok")) resolve(text);
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve(text));
    socket.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
  });
}

describe("the host's cap on connections", () => {
  it("closes a connection past it as it arrives, keeps the ones it holds, and takes new ones once some close", async () => {
    // Held open with nothing sent yet, as a client holding connections does.
    const held = [await opened(host.port), await opened(host.port), await opened(host.port)];
    const extra = await opened(host.port);
    expect(await healthz(extra)).toBe("");
    // The connections held are served.
    expect(await healthz(held[1] as Socket)).toMatch(/^HTTP\/1\.1 200 /);
    // Once one closes, the host takes a new connection (it hears of the close a moment later).
    (held[0] as Socket).destroy();
    let answer = "";
    for (let attempt = 0; attempt < 200 && answer === ""; attempt++) {
      const socket = await opened(host.port);
      answer = await healthz(socket);
      socket.destroy();
      if (answer === "") await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    for (const socket of held) socket.destroy();
    let metrics = "";
    for (let attempt = 0; attempt < 200 && metrics === ""; attempt++)
      metrics = await host.admin("/metrics", "GET").then(
        (answer) => answer.text(),
        () => new Promise<string>((resolve) => setTimeout(resolve, 10, "")),
      );
    const dropped = /^platform_connections_dropped_total (\d+)$/m.exec(metrics)?.[1];
    expect(Number(dropped)).toBeGreaterThanOrEqual(1);
  });
});

describe("each address's share", () => {
  it("closes an address's connection past its share as it arrives, and frees a place when one closes", async () => {
    let dropped = 0;
    const server = createServer();
    server.on(
      "connection",
      perAddressConnections(
        () => "one address",
        () => dropped++,
        2,
      ),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const closedByServer = (socket: Socket) =>
      new Promise<boolean>((resolve) => {
        socket.on("error", () => {});
        socket.once("close", () => resolve(true));
        socket.once("data", () => resolve(false));
      });
    try {
      const held = [await opened(port), await opened(port)];
      const third = await opened(port);
      expect(await closedByServer(third)).toBe(true);
      expect(dropped).toBe(1);
      (held[0] as Socket).destroy();
      // The server hears of the close a moment later; then the address's new connection stays.
      let kept: Socket | undefined;
      for (let attempt = 0; attempt < 200 && !kept; attempt++) {
        const socket = await opened(port);
        const closed = await Promise.race([
          closedByServer(socket),
          new Promise<false>((resolve) => setTimeout(resolve, 50, false)),
        ]);
        if (!closed) kept = socket;
      }
      expect(kept).toBeDefined();
      kept?.destroy();
      for (const socket of held) socket.destroy();
    } finally {
      server.close();
    }
  });

  it("holds every address to it only when asked (not behind a trusted proxy, nor without quotas)", () => {
    expect(hostConnectionLimit(10, true, () => {}).addressKey).toBeDefined();
    expect(hostConnectionLimit(10, false, () => {}).addressKey).toBeUndefined();
  });
});

describe("the default cap", () => {
  it("is half of what the open-files limit leaves past the host's own files", () => {
    // A connection may hold a second descriptor: a stored file it downloads, an S3 socket.
    expect(connectionCap(1_048_576)).toBe((1_048_576 - 1024) / 2);
    expect(connectionCap(20_000)).toBe((20_000 - 1024) / 2);
    // A limit too small for that: a quarter of it.
    expect(connectionCap(1024)).toBe(256);
    // No limit to read (or none set): no cap.
    expect(connectionCap(undefined)).toBe(Number.POSITIVE_INFINITY);
  });

  it("reads the process's soft limit", () => {
    const limit = openFilesLimit();
    if (process.platform === "linux") expect(limit).toBeGreaterThan(0);
    expect(openFilesLimit("/nonexistent/limits")).toBeUndefined();
  });
});
