/**
 * bench/live's client helpers (the subscriber process): HTTP posts over one keep-alive agent,
 * WebSockets, subscriptions, and timing how long each socket waits for a change.
 */
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { localhostLookup } from "../../dist/sdk/client/node-transport.js";
import { percentile } from "../lib/percentile.js";

const agent = new Agent({ keepAlive: true });

/** Posts `body` (JSON) to `url`; resolves with the response text of a 200. */
export function post(url: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "POST", agent, lookup: localhostLookup, headers: { "content-type": "application/json" } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks).toString())
            : reject(new Error(`${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Ends the keep-alive connections (the process can exit). */
export function closeAgent(): void {
  agent.destroy();
}

/** Opens one WebSocket. */
export function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { lookup: localhostLookup, perMessageDeflate: false });
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

/** Opens `count` WebSockets, at most 200 handshakes at a time. */
export async function openMany(url: string, count: number): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  while (sockets.length < count) {
    const batch = Math.min(200, count - sockets.length);
    sockets.push(...(await Promise.all(Array.from({ length: batch }, () => open(url)))));
  }
  return sockets;
}

/** Subscribes each socket to `name` with `args(index)`; resolves once each got its first value. */
export async function subscribeEach(
  sockets: WebSocket[],
  name: string,
  args: (index: number) => unknown,
): Promise<void> {
  await Promise.all(
    sockets.map(
      (ws, index) =>
        new Promise<void>((resolve) => {
          ws.once("message", () => resolve());
          ws.send(JSON.stringify({ type: "subscribe", id: "s", name, args: args(index) }));
        }),
    ),
  );
}

/** Tells the operator how far the bench got (stderr; results go to stdout). */
export function progress(message: string): void {
  process.stderr.write(`bench/live: ${message}\n`);
}

/** Prints one JSON line for bench/live/run.ts: the samples' percentiles and any `extra` figures. */
export function report(scenario: string, samples: number[], extra: Record<string, number> = {}): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const line = {
    scenario,
    samples: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1),
    ...extra,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  progress(`${scenario}: p50 ${line.p50?.toFixed(2)} ms`);
}

/**
 * One write and the sockets it must reach: `write()` is sent, and each socket's latency is the
 * time until `arrived(socketIndex, message)` first holds for it. Resolves with the latencies (in
 * socket order of arrival) and the time until the last socket had it.
 */
export async function timeWrite(
  sockets: WebSocket[],
  write: () => Promise<unknown>,
  arrived: (index: number, message: string) => boolean,
): Promise<{ samples: number[]; totalMs: number }> {
  const samples: number[] = [];
  let waiting = sockets.length;
  let start = 0;
  const done = new Promise<void>((resolve) => {
    sockets.forEach((ws, index) => {
      const onMessage = (data: WebSocket.RawData) => {
        if (!arrived(index, String(data))) return;
        samples.push(performance.now() - start);
        ws.off("message", onMessage);
        if (--waiting === 0) resolve();
      };
      ws.on("message", onMessage);
    });
  });
  start = performance.now();
  await write();
  await done;
  return { samples, totalMs: performance.now() - start };
}

/** Runs `timeWrite` for `rounds` rounds (`write(round)`), pooling the latencies. */
export async function measure(
  rounds: number,
  sockets: WebSocket[],
  write: (round: number) => Promise<unknown>,
  arrived: (index: number, message: string, round: number) => boolean,
): Promise<number[]> {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const timed = await timeWrite(
      sockets,
      () => write(round),
      (index, message) => arrived(index, message, round),
    );
    samples.push(...timed.samples);
  }
  return samples;
}
