/**
 * Hostile traffic from a process of its own, as an attacker's would come (fair-scheduling test):
 * its own CPU is not the host's. Argument: JSON `{ urls: {id: deploymentUrl}, targets }`, each
 * target `{ id, name, mode, calls }`:
 * - `loop`: `calls` callers that call the query again the moment an answer comes, refused or not;
 * - `flood`: `calls` calls at once, which hang (never awaited).
 * Writes `started` as it starts sending, and `ready` once every loop had an answer and every flood
 * had a call refused (its queue is full); runs until killed, or until its standard input closes: the test process holds the other
 * end, so an attacker never outlives a test process that died (it would go on calling refused
 * ports as fast as it can, slowing every later test on the machine). A line `count` on its
 * standard input makes it write `answered <json>`: how many of each target's calls have been
 * answered so far, by status (0 for a call that failed without an answer).
 */
import { sendRequest } from "../../cli/http.js";

interface Target {
  id: string;
  name: string;
  mode: "loop" | "flood";
  calls: number;
}

const { urls, targets } = JSON.parse(process.argv[2] as string) as {
  urls: Record<string, string>;
  targets: Target[];
};

/** Answers so far, by target id, then by status. */
const answered: Record<string, Record<number, number>> = {};

const call = async (target: Target) => {
  const response = await sendRequest(`${urls[target.id]}/api/query/${target.name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  }).catch(() => null);
  const byStatus = answered[target.id] ?? {};
  const status = response?.status ?? 0;
  byStatus[status] = (byStatus[status] ?? 0) + 1;
  answered[target.id] = byStatus;
  return response;
};

function attack(target: Target): Promise<unknown> {
  if (target.mode === "flood") {
    return new Promise<void>((resolve) => {
      for (let i = 0; i < target.calls; i++) {
        void call(target).then((response) => {
          if (response?.status === 503) resolve();
        });
      }
    });
  }
  return new Promise<void>((resolve) => {
    for (let i = 0; i < target.calls; i++) {
      void (async () => {
        for (;;) {
          await call(target);
          resolve();
        }
      })();
    }
  });
}

process.stdin.on("end", () => process.exit(0));
process.stdin.on("data", (chunk: Buffer) => {
  for (const line of chunk.toString().split("\n"))
    if (line === "count") process.stdout.write(`answered ${JSON.stringify(answered)}\n`);
});
process.stdout.write("started\n");
void Promise.all(targets.map(attack)).then(() => process.stdout.write("ready\n"));
