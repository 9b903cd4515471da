import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request a {@link FakeHost} received. */
export interface ReceivedRequest {
  method: string;
  url: string;
  authorization: string | undefined;
}

/** A loopback HTTP server standing in for a host that is not one (a proxy, a malicious server). */
export interface FakeHost {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Every request so far, in order. */
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/**
 * Starts a server on 127.0.0.1 that answers every request with `answer` (after its body has
 * arrived) and records what it was asked. CLI tests run the CLI as a subprocess against it, to see
 * what the CLI sends and how it takes what comes back; our own host is never mocked, only servers
 * that are not one.
 */
export async function startFakeHost(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<FakeHost> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    requests.push({
      method: req.method ?? "",
      url: req.url ?? "",
      authorization: req.headers.authorization,
    });
    req.resume();
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
