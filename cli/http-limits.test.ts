/**
 * What the CLI reads of an answer: a body up to `LIMITS.cliAnswerBytes`, a streamed line up to
 * `LIMITS.cliLineBytes` (an attack review, 2026-12-06: an endless `/v1/me` grew `platform login`
 * to 13.6 GB, a 64 MiB line took `platform logs` 3.8 GB), lines split wherever chunks end. Against
 * real loopback servers.
 */
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { LIMITS } from "../sdk/protocol/index.js";
import { isPlatformError } from "../sdk/values/index.js";
import { onLines, sendRequest } from "./http.js";
import { remoteErrorOf } from "./remote-error.js";

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A server answering with `answer`; its URL. */
async function serve(answer: (res: ServerResponse) => void): Promise<string> {
  server = createServer((_req, res) => answer(res));
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/**
 * Writes `chunk` again and again, as fast as it is read, until `total` bytes are sent or the
 * client goes; resolves once the answer is closed. (Not endless, so that a
 * CLI without its limits fails these tests instead of filling the machine's memory.)
 */
function flood(res: ServerResponse, chunk: Buffer, total: number, status = 200): Promise<void> {
  res.writeHead(status, { "content-type": "application/x-ndjson" });
  let sent = 0;
  return new Promise((resolve) => {
    res.on("close", () => resolve());
    const pump = () => {
      while (!res.destroyed && sent < total) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end();
    };
    pump();
  });
}

/** The answer to a GET of `url`, as a stream. */
function open(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => request(url, resolve).on("error", reject).end());
}

const MiB = 1024 * 1024;

it("stops reading a body past LIMITS.cliAnswerBytes, with too_large", async () => {
  let served: Promise<void> | undefined;
  const url = await serve((res) => {
    served = flood(res, Buffer.alloc(MiB, "A"), LIMITS.cliAnswerBytes + 8 * MiB);
  });
  const error = await sendRequest(url).catch((e: unknown) => e);
  expect(isPlatformError(error) && error.code).toBe("too_large");
  expect((error as Error).message).toContain(`passed ${LIMITS.cliAnswerBytes / MiB} MiB`);
  await served;
});

it("fails a streamed line past LIMITS.cliLineBytes without a newline, and stops reading", async () => {
  let served: Promise<void> | undefined;
  const url = await serve((res) => {
    served = flood(res, Buffer.alloc(64 * 1024, "A"), LIMITS.cliLineBytes + 4 * MiB);
  });
  const lines: string[] = [];
  const error = await onLines(await open(url), (line) => lines.push(line)).catch((e: unknown) => e);
  expect(isPlatformError(error) && error.code).toBe("too_large");
  expect(lines).toEqual([]);
  await served;
});

it("reads lines split anywhere, a character split between chunks kept whole", async () => {
  const text = Buffer.from('{"a":"é€😀"}\n\n{"b":2}\n{"c":"cut sh', "utf8");
  const url = await serve((res) => {
    res.writeHead(200);
    // One byte a write: every character of more than one byte is split between chunks.
    let at = 0;
    const next = () => (at < text.length ? res.write(text.subarray(at, ++at), next) : res.end());
    next();
  });
  const lines: string[] = [];
  await onLines(await open(url), (line) => lines.push(line));
  expect(lines).toEqual(['{"a":"é€😀"}', '{"b":2}']);
});

it("fails when a line's handler throws, reading no further", async () => {
  const url = await serve((res) => {
    res.writeHead(200);
    res.end("one\ntwo\nthree\n");
  });
  const lines: string[] = [];
  const error = await onLines(await open(url), (line) => {
    lines.push(line);
    if (line === "two") throw new Error("not a log line");
  }).catch((e: unknown) => e);
  expect((error as Error).message).toBe("not a log line");
  expect(lines).toEqual(["one", "two"]);
});

it("tells an overlong error body from its status, without reading it all", async () => {
  // An error envelope whose message never ends before the limit: read whole, it would be shown.
  const url = await serve((res) => {
    res.writeHead(403);
    res.write('{"error":{"code":"conflict","message":"');
    res.write(Buffer.alloc(LIMITS.cliAnswerBytes, "A"));
    res.end('"}}');
  });
  const error = await remoteErrorOf(await open(url), url);
  expect([error.code, error.message]).toEqual(["forbidden", "Request failed (403)."]);
});
