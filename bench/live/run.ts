/**
 * bench/live: commit-to-push latency with 1,000 subscribers on one deployment, next to a plain
 * WebSocket broadcast of the same payload to the same number of sockets, in ONE run. Latency is
 * measured by the subscriber process from sending the write (an HTTP request) until each socket
 * holds the change. Subscribers run in a separate process.
 *
 *   npm run bench:live            (BENCH_SUBSCRIBERS, BENCH_ROUNDS to change the size)
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { startHost } from "../../dist/host/host.js";

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);

interface Line {
  scenario: string;
  samples: number;
  p50: number;
  p99: number;
  max: number;
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
  try {
    await host.deployments.deploy("live", { code: (await bundleCapsule("fixtures/live")).code });
    const config = {
      subscribers: SUBSCRIBERS,
      rounds: ROUNDS,
      platform: host.deploymentUrl("live"),
      baseline: baseline.url,
    };
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "bench/live/subscribers.ts", JSON.stringify(config)],
        { maxBuffer: 1 << 20 },
        (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
      );
    });
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Line);
    const [shared, plain, distinct] = lines as [Line, Line, Line];
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
  } finally {
    await baseline.close();
    await host.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
