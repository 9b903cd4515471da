/**
 * Crash test: a child process commits transactions and is killed with SIGKILL at random moments.
 * After reopening, every transaction is either fully present (rows + every index entry + counter)
 * or absent, and nothing acknowledged before the kill is lost.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import { afterPrefix } from "../host/db/codec.js";
import { collect, HostDatabase } from "../host/db/index.js";
import { deploymentPrefixes, rowPrefix } from "../host/db/keys.js";
import { indexEntryKeys, type StoredRow } from "../host/db/rows.js";
import { tempDatabase } from "./helpers/db.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;

beforeAll(async () => {
  env = await tempDatabase();
  await env.db.close();
});
afterAll(() => env.dispose());

function runUntilKilled(dir: string, killAfterMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/crash-writer.ts", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let lastAck = 0;
    let buffered = "";
    let stderr = "";
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) lastAck = Number(line.slice(4));
      timer ??= setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("exit", (_code, signal) => {
      clearTimeout(timer);
      if (signal === "SIGKILL") resolve(lastAck);
      else reject(new Error(`writer exited without being killed: ${stderr}`));
    });
  });
}

async function check(dir: string): Promise<{ committed: number }> {
  const db = await HostDatabase.open(dir);
  try {
    const deployment = await db.deployment("crash");
    const items = deployment.tables.get("items")!;
    const counter = deployment.tables.get("counter")!;
    const expectedIndex = new Map<string, string>();
    const byN = new Map<number, number>();
    let counterValue = 0;
    for (const [table, name] of [
      [items, "items"],
      [counter, "counter"],
    ] as const) {
      const prefix = rowPrefix("crash", name);
      for (const [, json] of await collect(db.store.iterate({ gte: prefix, lt: afterPrefix(prefix) }))) {
        const row = JSON.parse(json) as StoredRow;
        for (const key of indexEntryKeys(table, row)) expectedIndex.set(key.toString("hex"), json);
        if (name === "items") byN.set(row.n as number, (byN.get(row.n as number) ?? 0) + 1);
        else counterValue = row.value as number;
      }
    }
    const indexPrefix = deploymentPrefixes("crash")[1] as Buffer;
    const actualIndex = new Map<string, string>();
    for (const [key, value] of await collect(
      db.store.iterate({ gte: indexPrefix, lt: afterPrefix(indexPrefix) }),
    )) {
      actualIndex.set(key.toString("hex"), value);
    }
    expect(actualIndex).toEqual(expectedIndex);
    for (const [n, count] of byN) expect(count, `transaction ${n}`).toBe(3);
    const committed = [...byN.keys()].sort((a, b) => a - b);
    expect(committed).toEqual(committed.map((_, i) => i + 1));
    expect(counterValue).toBe(committed.length);
    return { committed: committed.length };
  } finally {
    await db.close();
  }
}

it("keeps every transaction whole across SIGKILL", async () => {
  let previous = 0;
  for (let round = 0; round < 6; round++) {
    const acked = await runUntilKilled(env.dir, 50 + Math.floor(Math.random() * 400));
    const { committed } = await check(env.dir);
    expect(committed).toBeGreaterThanOrEqual(acked);
    expect(committed).toBeGreaterThanOrEqual(previous);
    previous = committed;
  }
  expect(previous).toBeGreaterThan(0);
}, 120_000);
