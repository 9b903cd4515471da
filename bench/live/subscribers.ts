/**
 * bench/live's client side, run as a separate process: opens N WebSockets, subscribes, then for
 * each round sends one write over HTTP and times, per socket, how long until the change arrives.
 *   tsx bench/live/subscribers.ts '<config json>'
 * Prints one JSON line per scenario: { scenario, samples, p50, p99, max }.
 */
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { localhostLookup } from "../../dist/sdk/client/node-transport.js";
import { percentile } from "../lib/percentile.js";

interface Config {
  subscribers: number;
  rounds: number;
  /** The platform deployment's origin (`http://live.localhost:<port>`). */
  platform: string;
  /** The plain broadcast server's origin. */
  baseline: string;
}

const config = JSON.parse(process.argv[2] as string) as Config;
const agent = new Agent({ keepAlive: true });

function post(url: string, body: string): Promise<string> {
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

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { lookup: localhostLookup, perMessageDeflate: false });
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

function report(scenario: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify({ scenario, samples: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) })}\n`,
  );
}

/**
 * Runs `rounds` rounds over `sockets`: `write(round)` is sent, and each socket's latency is the
 * time until `arrived(socketIndex, message, round)` first holds for it.
 */
async function measure(
  sockets: WebSocket[],
  write: (round: number) => Promise<unknown>,
  arrived: (index: number, message: string, round: number) => boolean,
): Promise<number[]> {
  const samples: number[] = [];
  for (let round = 0; round < config.rounds; round++) {
    let waiting = sockets.length;
    let start = 0;
    const done = new Promise<void>((resolve) => {
      sockets.forEach((ws, index) => {
        const onMessage = (data: WebSocket.RawData) => {
          if (!arrived(index, String(data), round)) return;
          samples.push(performance.now() - start);
          ws.off("message", onMessage);
          if (--waiting === 0) resolve();
        };
        ws.on("message", onMessage);
      });
    });
    start = performance.now();
    await write(round);
    await done;
  }
  return samples;
}

const platformSocket = `${config.platform.replace("http", "ws")}/api/sync`;
const baselineSocket = `${config.baseline.replace("http", "ws")}/`;

// (1) Every subscriber watches the same query: one shared execution per commit, N pushes.
const shared = await Promise.all(Array.from({ length: config.subscribers }, () => open(platformSocket)));
await Promise.all(
  shared.map(
    (ws) =>
      new Promise<void>((resolve) => {
        ws.once("message", () => resolve());
        ws.send(JSON.stringify({ type: "subscribe", id: "s", name: "byBucket", args: { bucket: 1 } }));
      }),
  ),
);
let lastPayload = "";
const sharedSamples = await measure(
  shared,
  (round) =>
    post(`${config.platform}/api/mutation/add`, JSON.stringify({ bucket: 1, text: `round ${round}` })),
  (index, message, round) => {
    if (!message.includes(`"round ${round}"`)) return false;
    if (index === 0) lastPayload = message;
    return true;
  },
);
report("platform: 1,000 subscribers, one shared query", sharedSamples);
for (const ws of shared) ws.terminate();

// (2) Plain WebSocket broadcast of the same payload, the same number of sockets.
const plain = await Promise.all(Array.from({ length: config.subscribers }, () => open(baselineSocket)));
const plainSamples = await measure(
  plain,
  (round) => post(`${config.baseline}/broadcast`, lastPayload.replace(/"round \d+"/, `"round ${round}"`)),
  (_index, message, round) => message.includes(`"round ${round}"`),
);
report("plain ws broadcast of the same payload", plainSamples);
for (const ws of plain) ws.terminate();

// (3) Every subscriber watches its own query and one commit touches all of them: N executions.
const distinct = await Promise.all(Array.from({ length: config.subscribers }, () => open(platformSocket)));
await Promise.all(
  distinct.map(
    (ws, index) =>
      new Promise<void>((resolve) => {
        ws.once("message", () => resolve());
        ws.send(
          JSON.stringify({ type: "subscribe", id: "s", name: "byBucket", args: { bucket: 10_000 + index } }),
        );
      }),
  ),
);
const buckets = distinct.map((_, index) => 10_000 + index);
const distinctSamples = await measure(
  distinct,
  () => post(`${config.platform}/api/mutation/addMany`, JSON.stringify({ buckets })),
  (index, message, round) => {
    const value = (JSON.parse(message) as { value?: string[] }).value;
    return value?.length === round + 1 && value[round] === `in ${10_000 + index}`;
  },
);
report("platform: 1,000 distinct queries, one commit touching all", distinctSamples);
for (const ws of distinct) ws.terminate();
agent.destroy();
