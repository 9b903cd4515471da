/**
 * bench/fairness: a good tenant's trivial query (p99 of 150 sequential calls over HTTP) while other
 * tenants of the same host attack it, against the good tenant alone, in interleaved rounds (alone,
 * flood, alone, hostile, alone, busy, alone, churn; 3 rounds by default). The attacks, each from a
 * process of its own (test/helpers/attacker.ts):
 * - flood: 300 never-settling calls to one tenant at once;
 * - hostile: 20 tenants spinning, allocating and hanging at once;
 * - busy: 20 tenants keeping 4 calls each of a few milliseconds of JSON parsing in flight;
 * - churn: 20 tenants keeping 4 calls each mapping and freeing about 56 MiB in flight.
 * Target: each attack's p99 within 10x of the alone p99 of its round (the median round's ratio).
 * test/fair-scheduling.test.ts checks the same attacks for behaviour, without timing them.
 *
 *   npm run bench:fairness
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { sendRequest } from "../../dist/cli/http.js";
import { startHost } from "../../dist/host/host.js";
import {
  type AttackTarget,
  answeredBetween,
  hostileTargets,
  loopingTargets,
  startAttacker,
} from "../../test/helpers/attacker-process.js";
import { percentile } from "../lib/percentile.js";
import { targetLine } from "../lib/targets.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Sequential calls of the good tenant per measurement. */
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 150);
/** How many times its alone p99 the good tenant's p99 under an attack may be. */
const TARGET_RATIO = 10;

const ATTACKS = ["flood", "hostile", "busy", "churn"] as const;
type Attack = (typeof ATTACKS)[number];

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** The attack `attack` of round `round`: fresh deployments where calls it leaves hanging would stay. */
function targetsOf(attack: Attack, round: number): AttackTarget[] {
  switch (attack) {
    case "flood":
      return [{ id: `flooded-${round}`, name: "hang", mode: "flood", calls: 300 }];
    case "hostile":
      return hostileTargets(`hostile-${round}-`);
    case "busy":
      return loopingTargets("busy", "busy");
    case "churn":
      return loopingTargets("churner", "churn");
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-fairness-"));
  const host = await startHost({
    // Its own traffic is not what is measured: no client address is held to a quota.
    requestQuota: false,
    data: dir,
    port: 0,
    domain: "localhost",
    adminToken: randomBytes(12).toString("hex"),
    logDestination: false,
    logCalls: false,
  });
  try {
    const { code } = await bundleCapsule("fixtures/fairness");
    const ids = new Set([
      "good",
      ...ATTACKS.flatMap((attack) =>
        range(ROUNDS).flatMap((round) => targetsOf(attack, round).map(({ id }) => id)),
      ),
    ]);
    for (const id of ids) await host.deployments.deploy(id, { code });

    const goodP99 = async (): Promise<number> => {
      const samples: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const started = performance.now();
        const response = await sendRequest(`${host.deploymentUrl("good")}/api/query/ok`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        samples.push(performance.now() - started);
        if (response.status !== 200) throw new Error(`the good tenant's call answered ${response.status}`);
      }
      return percentile(samples, 99);
    };
    await goodP99();

    const ratios = new Map<Attack, number[]>(ATTACKS.map((attack) => [attack, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const attack of ATTACKS) {
        const alone = await goodP99();
        const targets = targetsOf(attack, round);
        const urls = Object.fromEntries(targets.map(({ id }) => [id, host.deploymentUrl(id)]));
        const attacker = await startAttacker(urls, targets);
        const before = await attacker.answered();
        const under = await goodP99();
        const answered = answeredBetween(before, await attacker.answered());
        attacker.kill();
        const others = Object.values(answered).flatMap((byStatus) => Object.values(byStatus));
        const perGoodCall = others.reduce((a, b) => a + b, 0) / SAMPLES;
        (ratios.get(attack) as number[]).push(under / alone);
        console.log(
          `round ${round + 1}, ${attack}: good p99 alone ${alone.toFixed(1)} ms, under attack ${under.toFixed(1)} ms (${(under / alone).toFixed(2)}x); ${perGoodCall.toFixed(2)} of their calls answered per good call`,
        );
      }
    }
    console.log("");
    for (const attack of ATTACKS) {
      const ratio = percentile(ratios.get(attack) as number[], 50);
      console.log(
        targetLine(
          `good tenant's p99 under ${attack} / alone, median round`,
          `${ratio.toFixed(2)}x`,
          `<= ${TARGET_RATIO}x`,
          ratio <= TARGET_RATIO,
        ),
      );
    }
  } finally {
    await host.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
