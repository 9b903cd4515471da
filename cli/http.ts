import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { localhostLookup } from "../sdk/client/node-transport.js";

export { localhostLookup };

/** Node's `request` for `url`'s scheme: `https:` URLs need `node:https` (`node:http` refuses them). */
export function requestFor(url: URL): typeof httpRequest {
  return url.protocol === "https:" ? httpsRequest : httpRequest;
}

/** A response with its body read. */
export interface HttpResponse {
  /** The URL asked for (a redirect's relative `Location` is read against it). */
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text(): string;
  json<T = unknown>(): T;
}

/** Options of {@link sendRequest}. */
export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs?: number;
  /** Called as the body is sent (then it is written in 64 KiB chunks). */
  onProgress?: (sent: number, total: number) => void;
}

/**
 * One HTTP request with `*.localhost` resolved to loopback. Node keeps connections alive; when the
 * server had already closed the idle one this request went out on (a process that blocked for
 * longer than the server's keep-alive timeout), the request never reached it and is sent once more
 * on a new connection, as Node's docs advise (`request.reusedSocket`).
 */
export function sendRequest(url: string, options: RequestOptions = {}): Promise<HttpResponse> {
  return sendOnce(url, options, true);
}

function sendOnce(url: string, options: RequestOptions, mayResend: boolean): Promise<HttpResponse> {
  const target = new URL(url);
  const send = requestFor(target);
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: options.method ?? "GET",
        headers: options.headers,
        lookup: localhostLookup,
        timeout: options.timeoutMs ?? 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const body = Buffer.concat(chunks);
          resolve({
            url,
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            text: () => body.toString("utf8"),
            json: <T>() => JSON.parse(body.toString("utf8")) as T,
          });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`Request to ${url} timed out`)));
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (mayResend && req.reusedSocket && error.code === "ECONNRESET")
        resolve(sendOnce(url, options, false));
      else reject(error);
    });
    const { body, onProgress } = options;
    if (body !== undefined && onProgress && Buffer.isBuffer(body)) {
      req.setHeader("content-length", body.length);
      writeBody(req, body, onProgress);
    } else if (body !== undefined) req.end(body);
    else req.end();
  });
}

/**
 * Writes `body` in 64 KiB chunks, waiting for `drain` when the socket is full, reporting progress
 * after each chunk, then ends the request. (Headers such as Content-Length must be set first.)
 */
export function writeBody(
  req: ClientRequest,
  body: Buffer,
  onProgress?: (sent: number, total: number) => void,
): void {
  const CHUNK = 64 * 1024;
  let sent = 0;
  const pump = () => {
    while (sent < body.length) {
      const chunk = body.subarray(sent, sent + CHUNK);
      sent += chunk.length;
      const more = req.write(chunk);
      onProgress?.(sent, body.length);
      if (!more) {
        req.once("drain", pump);
        return;
      }
    }
    req.end();
  };
  pump();
}

/** Calls `onLine` for every non-empty line of a streamed response (NDJSON), as it arrives. */
export function onLines(stream: IncomingMessage, onLine: (line: string) => void): void {
  let pending = "";
  stream.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) if (line) onLine(line);
  });
}
