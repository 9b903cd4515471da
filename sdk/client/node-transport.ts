/**
 * The client's transport in Node: `*.localhost` resolves to loopback as in browsers (Node's own
 * resolver does not know it), WebSockets come from the `ws` package, tokens stay in memory.
 */
import { lookup as dnsLookup } from "node:dns";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import WebSocket from "ws";
import { type FetchFunction, memoryStore, type SocketLike, type Transport } from "./transport.js";

/**
 * Resolves `localhost` and every `*.localhost` name to loopback, as browsers do, so deployments at
 * `http://<id>.localhost:<port>` work from Node without touching /etc/hosts.
 */
export const localhostLookup: LookupFunction = (hostname, options, callback) => {
  if (hostname === "localhost" || hostname.endsWith(".localhost")) {
    if (options.all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address: "127.0.0.1", family: 4 },
      ]);
    else callback(null, "127.0.0.1", 4);
    return;
  }
  dnsLookup(hostname, options, callback);
};

function isLocalhost(url: URL): boolean {
  return url.hostname === "localhost" || url.hostname.endsWith(".localhost");
}

const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

/**
 * `fetch` over node:http with {@link localhostLookup}, answering a standard `Response`. The
 * request ends when `init.signal` aborts (the call's time ran out: see within-time.ts), freeing
 * its connection to a host that never answers.
 */
async function loopbackFetch(target: URL, init: Parameters<FetchFunction>[1]): Promise<Response> {
  const body =
    init.body === undefined
      ? undefined
      : typeof init.body === "string"
        ? Buffer.from(init.body)
        : init.body instanceof Uint8Array
          ? Buffer.from(init.body.buffer, init.body.byteOffset, init.body.byteLength)
          : Buffer.from(await init.body.arrayBuffer());
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: init.method,
        headers: { ...init.headers, ...(body ? { "content-length": String(body.length) } : {}) },
        lookup: localhostLookup,
        ...(init.signal ? { signal: init.signal } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined) continue;
            for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
          }
          const status = res.statusCode ?? 500;
          resolve(
            new Response(NULL_BODY_STATUS.has(status) ? null : Buffer.concat(chunks), {
              status,
              headers,
            }),
          );
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Node's `fetch`, except for `*.localhost`, which goes over node:http to loopback. */
export const nodeFetch: FetchFunction = (url, init) => {
  const target = new URL(url);
  if (isLocalhost(target)) return loopbackFetch(target, init);
  return fetch(url, init as RequestInit);
};

/**
 * How long a socket's opening handshake may take (ms). `ws` waits for good by default: a host that
 * takes the connection and never answers its upgrade left the socket connecting for as long as
 * the process lived, its subscriptions never answered nor retried.
 */
export const SOCKET_HANDSHAKE_MS = 30_000;

/**
 * The Node transport: {@link nodeFetch}, `ws` WebSockets (same lookup; a handshake not done within
 * `handshakeMs` fails, and the connection tries again after its backoff), tokens in memory.
 */
export function nodeTransport(handshakeMs = SOCKET_HANDSHAKE_MS): Transport {
  return {
    fetch: nodeFetch,
    socket: (url, protocols) =>
      new WebSocket(url, protocols ?? [], {
        lookup: localhostLookup,
        handshakeTimeout: handshakeMs,
      }) as unknown as SocketLike,
    store: memoryStore(),
  };
}
