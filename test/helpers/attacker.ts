/**
 * Hostile clients in a process of their own (test/fair-scheduling.test.ts): as on a real network,
 * the attack's requests cost the host's process only what serving them costs. Argument: JSON
 * `{ urls: { [deployment]: baseUrl }, attacks: [{ id, name, parallel, flood? }] }`. Keeps `parallel`
 * calls of query `name` to each deployment going (or, with `flood`, sends that many calls at once
 * and no more). Writes "ready" on stdout once every attack had its first answer (for a flood: the
 * first refusal), and when its stdin closes, the answers it had by status, and exits.
 */
import { sendRequest } from "../../cli/http.js";

interface Attack {
  id: string;
  name: string;
  parallel: number;
  flood?: number;
}

const { urls, attacks } = JSON.parse(process.argv[2] as string) as {
  urls: Record<string, string>;
  attacks: Attack[];
};
let attacking = true;
const statuses = new Map<string, number>();
const started = Date.now();
process.stdin.on("close", () => {
  const answers = [...statuses].map(([status, count]) => `${count} x ${status}`).join(", ");
  process.stderr.write(`attackers: answers in ${((Date.now() - started) / 1000).toFixed(1)} s: ${answers}\n`);
  process.exit(0);
});
process.stdin.resume();

function call(attack: Attack) {
  return sendRequest(`${urls[attack.id]}/api/query/${attack.name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
    timeoutMs: 600_000,
  })
    .then((response) => {
      const status = String(response.status);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      return response;
    })
    .catch(() => null);
}

function firstAnswer(attack: Attack): Promise<unknown> {
  if (attack.flood !== undefined) {
    const calls = Array.from({ length: attack.flood }, () => call(attack));
    return Promise.race(calls.map((c) => c.then((r) => r ?? new Promise<never>(() => {}))));
  }
  const first = call(attack);
  const keep = async () => {
    await first;
    while (attacking) await call(attack);
  };
  for (let i = 0; i < attack.parallel; i++) void keep();
  return first;
}

await Promise.all(attacks.map(firstAnswer));
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  attacking = false;
  process.exit(0);
});
