import type { Server } from "node:http";
import type { SyncEndpoint } from "./sync.js";

/** How long the last step waits for connections a bound cut off to report closed (ms). */
const CLOSE_WAIT_MS = 1000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * A graceful stop of the HTTP server: it stops listening at once (a balancer's next connection
 * goes to another host), closes idle kept-alive connections, lets requests in flight finish (each
 * response closes its connection: see `closeWhen` in server.ts), answers the mutations taken on each
 * sync socket and closes it for a reconnect elsewhere. After `boundMs` whatever is left is closed
 * as it is.
 */
export async function drainServer(server: Server, sync: SyncEndpoint, boundMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => {
    if (server.listening) server.close(() => resolve());
    else resolve();
  });
  server.closeIdleConnections();
  const finished = Promise.all([sync.drain(), closed]).then(() => true);
  if (await Promise.race([finished, delay(boundMs).then(() => false)])) return;
  sync.stop();
  server.closeAllConnections();
  await Promise.race([closed, delay(CLOSE_WAIT_MS)]);
}
