/**
 * Hostile traffic from a process of its own, as an attacker's would come (fair-scheduling test):
 * its own CPU is not the host's. Argument: JSON `{ urls: {id: deploymentUrl}, targets }`, each
 * target `{ id, name, mode, calls }`:
 * - `loop`: `calls` callers that call the query again the moment an answer comes, refused or not;
 * - `flood`: `calls` calls at once, which hang (never awaited).
 * Writes `started` as it starts sending, and `ready` once every loop had an answer and every flood
 * had a call refused (its queue is full); runs until killed, or until its standard input closes: the test process holds the other
 * end, so an attacker never outlives a test process that died (it would go on calling refused
 * ports as fast as it can, slowing every later test on the machine).
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

const call = (target: Target) =>
  sendRequest(`${urls[target.id]}/api/query/${target.name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  }).catch(() => null);

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
process.stdin.resume();
process.stdout.write("started\n");
void Promise.all(targets.map(attack)).then(() => process.stdout.write("ready\n"));
