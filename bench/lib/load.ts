/**
 * Load generator, run as a separate process so it does not share the server's event loop:
 *   tsx bench/lib/load.ts <url> <bodies.json> <seconds> <connections> [host header]
 * Prints one JSON line: { rps, p50, p99, errors, non2xx, total, cpu }, `cpu` being this process's
 * CPU seconds during the run (all its threads; its start-up left out). The optional `Host` header picks a
 * deployment on a host reached by its address (`bench.localhost:8080` at `http://127.0.0.1:8080`).
 * With `LOAD_SPREAD=1` in the environment, connection i starts its cycle at body i (otherwise every
 * connection sends the bodies in the same order, so requests in flight at once mostly share one).
 */
import { readFileSync } from "node:fs";
import autocannon from "autocannon";

const [url, bodiesFile, seconds = "5", connections = "32", host] = process.argv.slice(2);
const bodies = JSON.parse(readFileSync(bodiesFile as string, "utf8")) as string[];
const spread = process.env.LOAD_SPREAD === "1";
let connection = 0;
const cpuBefore = process.cpuUsage();
const options: autocannon.Options = {
  url: url as string,
  method: "POST",
  duration: Number(seconds),
  connections: Number(connections),
  headers: { "content-type": "application/json", ...(host ? { host } : {}) },
  requests: bodies.map((body) => ({ method: "POST", body })),
};
if (spread)
  options.setupClient = (client) => {
    const at = connection++ % bodies.length;
    client.setRequests(
      [...bodies.slice(at), ...bodies.slice(0, at)].map((body) => ({ method: "POST", body })),
    );
  };
const result = await autocannon(options);
const cpu = process.cpuUsage(cpuBefore);
process.stdout.write(
  `${JSON.stringify({ rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx, total: result.requests.total, cpu: (cpu.user + cpu.system) / 1e6 })}\n`,
);
