/**
 * Load generator, run as a separate process so it does not share the server's event loop:
 *   tsx bench/lib/load.ts <url> <bodies.json> <seconds> <connections>
 * Prints one JSON line: { rps, p50, p99, errors, non2xx }.
 */
import { readFileSync } from "node:fs";
import autocannon from "autocannon";

const [url, bodiesFile, seconds = "5", connections = "32"] = process.argv.slice(2);
const bodies = JSON.parse(readFileSync(bodiesFile as string, "utf8")) as string[];
const result = await autocannon({
  url: url as string,
  method: "POST",
  duration: Number(seconds),
  connections: Number(connections),
  headers: { "content-type": "application/json" },
  requests: bodies.map((body) => ({ method: "POST", body })),
});
process.stdout.write(
  `${JSON.stringify({ rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx })}\n`,
);
