/**
 * bench/live's client side, run as a separate process: opens N WebSockets, subscribes, then for
 * each round sends one write over HTTP and times, per socket, how long until the change arrives.
 *   tsx bench/live/subscribers.ts '<config json>'
 * Prints one JSON line per scenario: { scenario, samples, p50, p99, max }.
 */
import { manyDistinct } from "./many-distinct.js";
import { closeAgent, measure, openMany, post, progress, report, subscribeEach } from "./sockets.js";

interface Config {
  subscribers: number;
  rounds: number;
  /** The platform deployment's origin (`http://live.localhost:<port>`). */
  platform: string;
  /** The plain broadcast server's origin. */
  baseline: string;
  /** Distinct subscriptions of the last scenarios, and their rounds. */
  distinct: number;
  fewRounds: number;
  allRounds: number;
  /** The host process's control server (see many-distinct.ts). */
  control: string;
}

const config = JSON.parse(process.argv[2] as string) as Config;

const platformSocket = `${config.platform.replace("http", "ws")}/api/sync`;
const baselineSocket = `${config.baseline.replace("http", "ws")}/`;

// (1) Every subscriber watches the same query: one shared execution per commit, N pushes.
const shared = await openMany(platformSocket, config.subscribers);
await subscribeEach(shared, "byBucket", () => ({ bucket: 1 }));
progress(`${config.subscribers} sockets subscribed to one query`);
let lastPayload = "";
const sharedSamples = await measure(
  config.rounds,
  shared,
  (round) =>
    post(`${config.platform}/api/mutation/add`, JSON.stringify({ bucket: 1, text: `round ${round}` })),
  (index, message, round) => {
    if (!message.includes(`"round ${round}"`)) return false;
    if (index === 0) lastPayload = message;
    return true;
  },
);
report(`platform: ${config.subscribers} subscribers, one shared query`, sharedSamples);
for (const ws of shared) ws.terminate();

// (2) Plain WebSocket broadcast of the same payload, the same number of sockets.
const plain = await openMany(baselineSocket, config.subscribers);
const plainSamples = await measure(
  config.rounds,
  plain,
  (round) => post(`${config.baseline}/broadcast`, lastPayload.replace(/"round \d+"/, `"round ${round}"`)),
  (_index, message, round) => message.includes(`"round ${round}"`),
);
report("plain ws broadcast of the same payload", plainSamples);
for (const ws of plain) ws.terminate();

// (3) Every subscriber watches its own query and one commit touches all of them: N executions.
const distinct = await openMany(platformSocket, config.subscribers);
await subscribeEach(distinct, "byBucket", (index) => ({ bucket: 10_000 + index }));
progress(`${config.subscribers} sockets subscribed to distinct queries`);
const buckets = distinct.map((_, index) => 10_000 + index);
const distinctSamples = await measure(
  config.rounds,
  distinct,
  () => post(`${config.platform}/api/mutation/addMany`, JSON.stringify({ buckets })),
  (index, message, round) => {
    const value = (JSON.parse(message) as { value?: string[] }).value;
    return value?.length === round + 1 && value[round] === `in ${10_000 + index}`;
  },
);
report(`platform: ${config.subscribers} distinct queries, one commit touching all`, distinctSamples);
for (const ws of distinct) ws.terminate();

// (4) Many distinct subscriptions: commits touching 10 of them, then all of them.
await manyDistinct({ ...config, platformSocket, baselineSocket });
closeAgent();
