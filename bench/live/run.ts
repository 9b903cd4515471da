/**
 * bench/live: commit-to-push latency with 1,000 subscribers on one deployment, next to a plain
 * WebSocket broadcast of the same payload to the same number of sockets, in ONE run; then 5,000
 * distinct subscriptions: commits touching 10 of them (target: p50 under 10 ms) and commits
 * touching all (target: the last push within 2x of the sum of the 5,000 queries' single
 * executions, measured here just before each such commit), next to a plain broadcast to 5,000
 * sockets. Latency is measured by the subscriber process from sending the write (an HTTP request)
 * until each socket holds the change. Subscribers run in a separate process.
 *
 *   npm run bench:live   (BENCH_SUBSCRIBERS, BENCH_ROUNDS, BENCH_DISTINCT, BENCH_FEW_ROUNDS,
 *                         BENCH_ALL_ROUNDS to change the sizes)
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { WebSocketServer } from "ws";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { type PlatformHost, startHost } from "../../dist/host/host.js";
import { targetLine } from "../lib/targets.js";

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const DISTINCT = Number(process.env.BENCH_DISTINCT ?? 5000);
const FEW_ROUNDS = Number(process.env.BENCH_FEW_ROUNDS ?? 30);
const ALL_ROUNDS = Number(process.env.BENCH_ALL_ROUNDS ?? 3);

interface Line {
  scenario: string;
  samples: number;
  p50: number;
  p99: number;
  max: number;
  /** Time until the last socket had the change (mean over rounds). */
  totalMs?: number;
  /** The sum of the queries' single executions (mean over rounds). */
  singlesMs?: number;
}

/** The baseline: `POST /broadcast` sends its body to every connected socket, nothing else. */
async function plainBroadcastServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const payload = Buffer.concat(chunks).toString();
      for (const client of wss.clients) client.send(payload);
      res.end("{}");
    });
  });
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        for (const client of wss.clients) client.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * `POST /singles {buckets}` runs `byBucket` for each bucket, one after the other, in this process
 * (the host's own call path, no HTTP), and answers the sum of their times. A write to another
 * deployment first: the re-runs before read the same buckets through the snapshot the singles
 * would share, and its scan memo (host/db/kv/scan-memo.ts) would answer them, as it never answers
 * re-runs after a commit.
 */
/** A deployment nobody subscribes to, written to before the singles (see {@link controlServer}). */
const MEMO_BREAKER = "live-other";

async function controlServer(host: PlatformHost): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const { buckets } = JSON.parse(Buffer.concat(chunks).toString()) as { buckets: number[] };
      await host.deployments.call(MEMO_BREAKER, {
        kind: "mutation",
        name: "add",
        argsJson: '{"bucket":-1,"text":"a write between the re-runs and the singles"}',
        identity: null,
      });
      let sumMs = 0;
      for (const bucket of buckets) {
        const start = performance.now();
        await host.deployments.call("live", {
          kind: "query",
          name: "byBucket",
          argsJson: JSON.stringify({ bucket }),
          identity: null,
        });
        sumMs += performance.now() - start;
      }
      res.end(JSON.stringify({ sumMs }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-live-"));
  const host = await startHost({
    requestQuota: false,
    data: dir,
    port: 0,
    domain: "localhost",
    adminToken: "bench",
    logDestination: false,
  });
  const baseline = await plainBroadcastServer();
  const control = await controlServer(host);
  try {
    const code = (await bundleCapsule("fixtures/live")).code;
    await host.deployments.deploy("live", { code });
    await host.deployments.deploy(MEMO_BREAKER, { code });
    const config = {
      subscribers: SUBSCRIBERS,
      rounds: ROUNDS,
      platform: host.deploymentUrl("live"),
      baseline: baseline.url,
      distinct: DISTINCT,
      fewRounds: FEW_ROUNDS,
      allRounds: ALL_ROUNDS,
      control: control.url,
    };
    const stdout = await new Promise<string>((resolve, reject) => {
      // The subscriber process's progress (stderr) shows here as it goes; its results come on stdout.
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "bench/live/subscribers.ts", JSON.stringify(config)],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      child.on("error", reject);
      child.on("exit", (code) =>
        code === 0 ? resolve(out) : reject(new Error(`subscribers exited with ${code}`)),
      );
    });
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Line);
    const [shared, plain, distinct, few, all, plainMany] = lines as [Line, Line, Line, Line, Line, Line];
    const ms = (n: number) => `${n.toFixed(2)} ms`;
    console.log(`bench/live: ${SUBSCRIBERS} subscribers, ${ROUNDS} writes each, node ${process.version}`);
    console.log("| scenario | samples | p50 | p99 | max |");
    console.log("| --- | --- | --- | --- | --- |");
    for (const line of lines)
      console.log(
        `| ${line.scenario} | ${line.samples} | ${ms(line.p50)} | ${ms(line.p99)} | ${ms(line.max)} |`,
      );
    console.log(
      `ratio, shared query / plain broadcast: p50 ${(shared.p50 / plain.p50).toFixed(2)}x, p99 ${(shared.p99 / plain.p99).toFixed(2)}x`,
    );
    console.log(
      `ratio, distinct queries / plain broadcast: p50 ${(distinct.p50 / plain.p50).toFixed(2)}x, p99 ${(distinct.p99 / plain.p99).toFixed(2)}x`,
    );
    const met = (ok: boolean) => (ok ? "met" : "NOT met");
    console.log(
      `${DISTINCT} distinct, a commit touching 10: commit-to-push p50 ${ms(few.p50)} (target < 10 ms: ${met(few.p50 < 10)}), p99 ${ms(few.p99)}; plain broadcast to ${DISTINCT} sockets p50 ${ms(plainMany.p50)}`,
    );
    const total = all.totalMs as number;
    const singles = all.singlesMs as number;
    console.log(
      `${DISTINCT} distinct, a commit touching all: last push after ${ms(total)}, sum of single executions ${ms(singles)}, ratio ${(total / singles).toFixed(2)}x (target <= 2x: ${met(total <= 2 * singles)}); plain broadcast to ${DISTINCT} sockets: last after ${ms(plainMany.totalMs as number)}`,
    );
    console.log(
      [
        "",
        targetLine(
          `${DISTINCT} distinct subscriptions, a commit touching 10: push p50`,
          ms(few.p50),
          "< 10 ms",
          few.p50 < 10,
        ),
        targetLine(
          `${DISTINCT} distinct subscriptions, a commit touching all: last push / sum of single executions`,
          `${(total / singles).toFixed(2)}x`,
          "<= 2x",
          total <= 2 * singles,
        ),
      ].join("\n"),
    );
  } finally {
    await control.close();
    await baseline.close();
    await host.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
