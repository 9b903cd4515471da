/**
 * A small round-robin load balancer for tests of several hosts: plain HTTP and WebSocket upgrades,
 * each request on a new connection to a backend. A backend that refuses the connection (stopped
 * or restarting) is skipped for the next one, as nginx's `proxy_next_upstream error` does; a
 * backend that fails after taking the connection gets the caller a `502` of the balancer's own
 * (no error envelope), and a socket whose backend goes away is closed.
 */
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import net, { type AddressInfo } from "node:net";
import type { Duplex } from "node:stream";

export interface Balancer {
  port: number;
  /** Requests and upgrades each backend took (by port). */
  taken: Map<number, number>;
  close(): Promise<void>;
}

function refused(error: unknown): boolean {
  return (error as NodeJS.ErrnoException)?.code === "ECONNREFUSED";
}

/** Starts a balancer on a free loopback port in front of `backends` (ports on 127.0.0.1). */
export async function startBalancer(backends: number[]): Promise<Balancer> {
  let next = 0;
  const taken = new Map<number, number>();
  const order = () => {
    const start = next++ % backends.length;
    return backends.map((_, i) => backends[(start + i) % backends.length] as number);
  };
  const count = (port: number) => taken.set(port, (taken.get(port) ?? 0) + 1);
  const sockets = new Set<Duplex>();

  const forward = (
    req: IncomingMessage,
    body: Buffer,
    res: import("node:http").ServerResponse,
    ports: number[],
  ) => {
    const [port, ...rest] = ports;
    if (port === undefined) {
      res.writeHead(503, { "content-type": "text/plain" }).end("no backend available\n");
      return;
    }
    const upstream = request(
      {
        host: "127.0.0.1",
        port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, connection: "close" },
        agent: false,
      },
      (answer) => {
        count(port);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      },
    );
    upstream.on("error", (error) => {
      if (res.headersSent) res.destroy();
      else if (refused(error)) forward(req, body, res, rest);
      else res.writeHead(502, { "content-type": "text/plain" }).end("bad gateway\n");
    });
    upstream.end(body);
  };

  const upgrade = (req: IncomingMessage, client: Duplex, head: Buffer, ports: number[]) => {
    const [port, ...rest] = ports;
    if (port === undefined) {
      client.end("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n");
      return;
    }
    const upstream = net.connect(port, "127.0.0.1");
    let connected = false;
    upstream.once("connect", () => {
      connected = true;
      count(port);
      sockets.add(upstream);
      let lines = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        lines += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
      upstream.write(`${lines}\r\n`);
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", (error) => {
      if (!connected && refused(error)) upgrade(req, client, head, rest);
      else client.destroy();
    });
    // A clean end reaches the client through the pipe (after the close frame, if any).
    upstream.on("close", (hadError) => {
      sockets.delete(upstream);
      if (connected && hadError) client.destroy();
    });
    client.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => forward(req, Buffer.concat(chunks), res, order()));
  });
  server.on("upgrade", (req, client: Duplex, head: Buffer) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    upgrade(req, client, head, order());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    taken,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
