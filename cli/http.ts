import {
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from "node:http";
import { request as httpsRequest } from "node:https";
import { localhostLookup } from "../sdk/client/node-transport.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { checkTokenTransport } from "./token-transport.js";

export { localhostLookup };

/** Node's `request` for `url`'s scheme: `https:` URLs need `node:https` (`node:http` refuses them). */
export function requestFor(url: URL): typeof httpRequest {
  return url.protocol === "https:" ? httpsRequest : httpRequest;
}

/**
 * Starts a request whose answer `onResponse` reads as a stream (a deploy's progress, logs, an
 * export), with `*.localhost` resolved to loopback. A token in `headers` goes only where
 * {@link checkTokenTransport} lets it: else this throws, before anything is sent.
 */
export function openRequest(
  url: URL,
  options: { method?: string; headers?: OutgoingHttpHeaders },
  onResponse: (res: IncomingMessage) => void,
): ClientRequest {
  checkTokenTransport(url, options.headers);
  return requestFor(url)(url, { ...options, lookup: localhostLookup }, onResponse);
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
  /** Bytes of the answer read at most (default `LIMITS.cliAnswerBytes`); past them it fails. */
  maxBytes?: number;
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
  const maxBytes = options.maxBytes ?? LIMITS.cliAnswerBytes;
  return new Promise((resolve, reject) => {
    // Thrown here, a refusal rejects the promise before anything is sent.
    checkTokenTransport(target, options.headers);
    let failed = false;
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
        let received = 0;
        res.on("data", (chunk: Buffer) => {
          received += chunk.length;
          if (received > maxBytes) {
            failed = true;
            res.destroy();
            reject(answerTooLarge(target, maxBytes));
          } else chunks.push(chunk);
        });
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
      if (failed) return;
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

const inMebibytes = (bytes: number) => `${bytes / 1024 / 1024} MiB`;

/**
 * The error for an answer past what the CLI reads ({@link LIMITS.cliAnswerBytes}): no host sends
 * one, and reading on would hold it all in memory (an endless body grew `platform login` to
 * 13.6 GB in 60 s).
 */
function answerTooLarge(url: URL, maxBytes: number): PlatformError {
  return new PlatformError(
    "too_large",
    `The answer of ${url.origin} passed ${inMebibytes(maxBytes)}, more than a platform host sends: the rest was not read. Is --host a platform host?`,
  );
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

/**
 * Calls `onLine` for every non-empty line of a streamed answer (NDJSON) as it arrives; resolves
 * once the answer ends (a last line without its newline was cut short, and is not given). Fails,
 * and reads no further, when the answer fails, when `onLine` throws, or when a line passes
 * `maxLineBytes` (default {@link LIMITS.cliLineBytes}): a 64 MiB line took `platform logs` 32.6 s
 * and 3.8 GB, every chunk appended to one string and all of it split again. Only each new chunk is
 * searched for a newline, and a line is decoded once whole (a character split between chunks stays
 * one character).
 */
export function onLines(
  stream: IncomingMessage,
  onLine: (line: string) => void,
  maxLineBytes: number = LIMITS.cliLineBytes,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const tooLong = () =>
      new PlatformError(
        "too_large",
        `A line of the host's answer passed ${inMebibytes(maxLineBytes)}, more than a platform host sends: the rest was not read.`,
      );
    stream.on("data", (chunk: Buffer) => {
      try {
        let start = 0;
        for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, start)) {
          const end = chunk.subarray(start, at);
          if (pendingBytes + end.length > maxLineBytes) throw tooLong();
          const line = (pending.length === 0 ? end : Buffer.concat([...pending, end])).toString("utf8");
          pending = [];
          pendingBytes = 0;
          start = at + 1;
          if (line) onLine(line);
        }
        if (start < chunk.length) {
          pendingBytes += chunk.length - start;
          if (pendingBytes > maxLineBytes) throw tooLong();
          pending.push(chunk.subarray(start));
        }
      } catch (error) {
        stream.destroy();
        reject(error);
      }
    });
    stream.on("error", reject);
    stream.on("end", () => resolve());
  });
}
