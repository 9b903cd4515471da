/**
 * bench/live's scenarios with many distinct subscriptions (the subscriber process): N sockets each
 * watching its own bucket; commits touching 10 of them (commit-to-push latency of those 10), then
 * commits touching all of them (time until the last push, against the sum of the N queries' single
 * executions, measured by the host process just before each such commit), next to a plain
 * WebSocket broadcast to N sockets.
 */
import { openMany, post, progress, report, subscribeEach, timeWrite } from "./sockets.js";

export interface ManyConfig {
  distinct: number;
  /** Commits touching 10 subscriptions. */
  fewRounds: number;
  /** Commits touching all of them. */
  allRounds: number;
  platformSocket: string;
  baselineSocket: string;
  platform: string;
  baseline: string;
  /** The host process's control server: `POST /singles` runs the queries one by one. */
  control: string;
}

const FIRST_BUCKET = 100_000;

/** Runs the scenarios and prints their lines. */
export async function manyDistinct(config: ManyConfig): Promise<void> {
  const n = config.distinct;
  const buckets = Array.from({ length: n }, (_, index) => FIRST_BUCKET + index);
  const items = buckets.map(() => 0);
  const sockets = await openMany(config.platformSocket, n);
  await subscribeEach(sockets, "byBucket", (index) => ({ bucket: buckets[index] }));
  progress(`${n} sockets subscribed to distinct queries`);
  const holdsAll = (index: number, message: string) =>
    (JSON.parse(message) as { value?: string[] }).value?.length === items[index];

  const few: number[] = [];
  const stride = Math.floor(n / 10);
  let lastPayload = "";
  for (let round = 0; round < config.fewRounds; round++) {
    const touched = Array.from({ length: 10 }, (_, i) => (i * stride + round) % n);
    for (const index of touched) items[index] = (items[index] ?? 0) + 1;
    const timed = await timeWrite(
      touched.map((index) => sockets[index] as (typeof sockets)[number]),
      () =>
        post(
          `${config.platform}/api/mutation/addMany`,
          JSON.stringify({ buckets: touched.map((i) => buckets[i]) }),
        ),
      (at, message) => {
        lastPayload = message;
        return holdsAll(touched[at] as number, message);
      },
    );
    few.push(...timed.samples);
  }
  report(`platform: ${n} distinct queries, a commit touching 10`, few);

  const all: number[] = [];
  const totals: number[] = [];
  const singles: number[] = [];
  for (let round = 0; round < config.allRounds; round++) {
    const { sumMs } = JSON.parse(await post(`${config.control}/singles`, JSON.stringify({ buckets }))) as {
      sumMs: number;
    };
    singles.push(sumMs);
    for (let index = 0; index < n; index++) items[index] = (items[index] ?? 0) + 1;
    const timed = await timeWrite(
      sockets,
      () => post(`${config.platform}/api/mutation/addMany`, JSON.stringify({ buckets })),
      holdsAll,
    );
    all.push(...timed.samples);
    totals.push(timed.totalMs);
  }
  const total = totals.reduce((a, b) => a + b, 0) / totals.length;
  const sum = singles.reduce((a, b) => a + b, 0) / singles.length;
  report(`platform: ${n} distinct queries, a commit touching all`, all, { totalMs: total, singlesMs: sum });
  for (const ws of sockets) ws.terminate();

  const plain = await openMany(config.baselineSocket, n);
  const plainSamples: number[] = [];
  const plainTotals: number[] = [];
  for (let round = 0; round < Math.max(config.allRounds, 5); round++) {
    const tag = `"plain ${round}"`;
    const timed = await timeWrite(
      plain,
      () => post(`${config.baseline}/broadcast`, `${lastPayload.slice(0, -1)},"tag":${tag}}`),
      (_index, message) => message.includes(tag),
    );
    plainSamples.push(...timed.samples);
    plainTotals.push(timed.totalMs);
  }
  const plainTotal = plainTotals.reduce((a, b) => a + b, 0) / plainTotals.length;
  report(`plain ws broadcast to ${n} sockets`, plainSamples, { totalMs: plainTotal });
  for (const ws of plain) ws.terminate();
}
