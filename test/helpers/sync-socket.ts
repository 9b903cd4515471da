import WebSocket from "ws";
import { localhostLookup } from "../../cli/http.js";

/** A message received over `GET /api/sync`. */
export type SyncMessage = Record<string, unknown>;

/** A test's WebSocket to `GET /api/sync`: every message kept, in order, with waits on them. */
export interface SyncSocket {
  ws: WebSocket;
  messages: SyncMessage[];
  /** Resolves with the first message (received so far or later) that `predicate` accepts. */
  next(predicate: (m: SyncMessage) => boolean): Promise<SyncMessage>;
  /** The messages about subscription or mutation `id`, in order. */
  of(id: string): SyncMessage[];
  subscribe(id: string, name: string, args: unknown): void;
  /**
   * Runs a mutation over this socket and waits for its answer. The host answers only after every
   * push it caused went out on the socket, so it doubles as a barrier: whatever the host had to
   * send before has arrived.
   */
  mutation(id: string, name: string, args: unknown): Promise<SyncMessage>;
}

/**
 * Opens a WebSocket to `deploymentUrl`'s `GET /api/sync`, with `headers` on its upgrade (an
 * `X-Forwarded-For` poses as another client to a host that trusts a proxy).
 */
export function connectSync(
  deploymentUrl: string,
  headers: Record<string, string> = {},
): Promise<SyncSocket> {
  const ws = new WebSocket(`${deploymentUrl.replace("http", "ws")}/api/sync`, {
    lookup: localhostLookup,
    headers,
  } as WebSocket.ClientOptions);
  const messages: SyncMessage[] = [];
  const waiters: Array<{ predicate: (m: SyncMessage) => boolean; resolve: (m: SyncMessage) => void }> = [];
  ws.on("message", (data) => {
    const message = JSON.parse(String(data)) as SyncMessage;
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (!waiter.predicate(message)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(message);
    }
  });
  const next = (predicate: (m: SyncMessage) => boolean) =>
    new Promise<SyncMessage>((resolve) => {
      const found = messages.find(predicate);
      if (found) resolve(found);
      else waiters.push({ predicate, resolve });
    });
  const socket: SyncSocket = {
    ws,
    messages,
    next,
    of: (id) => messages.filter((m) => m.id === id),
    subscribe: (id, name, args) => ws.send(JSON.stringify({ type: "subscribe", id, name, args })),
    mutation: (id, name, args) => {
      ws.send(JSON.stringify({ type: "mutation", id, name, args }));
      return next((m) => m.type === "mutationResult" && m.id === id);
    },
  };
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(socket));
    ws.once("error", reject);
  });
}
