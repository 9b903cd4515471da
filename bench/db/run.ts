/**
 * bench/db: the document database next to raw classic-level, in ONE run on the same machine.
 * Not a test: prints numbers and ratios. Targets (issue 2): scans within 1.5x of raw classic-level;
 * inserts (row + 3 index entries) at least 40% of raw batch() put throughput.
 *
 *   npm run bench:db
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClassicLevel } from "classic-level";
import { HostDatabase, UNLIMITED_BUDGET } from "../../dist/host/db/index.js";
import type { SchemaSpec } from "../../dist/sdk/values/index.js";

const SCHEMA: SchemaSpec = {
  tables: {
    items: {
      fields: {
        title: { kind: "string", optional: false },
        owner: { kind: "string", optional: false },
        score: { kind: "number", optional: false },
        done: { kind: "boolean", optional: false },
      },
      indexes: { by_owner: ["owner"], by_score: ["score"] },
    },
  },
};
const ROWS = 20_000;
const INSERT_BATCH = 100;
/** The same native batch sizes the platform's scans use, so both sides make the same round trips. */
const HWM = 4 * 1024 * 1024;
const KEY_HWM = 256 * 1024;

function makeRow(i: number) {
  return {
    title: `item ${i} ${"lorem ipsum ".repeat(4)}`,
    owner: `user${i % 50}`,
    score: (i * 7919) % 1000,
    done: i % 3 === 0,
  };
}

async function timeIt(label: string, iterations: number, work: () => unknown): Promise<number> {
  for (let i = 0; i < Math.min(iterations, 50); i++) await work();
  const samples: number[] = [];
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await work();
    samples.push(Number(process.hrtime.bigint() - start) / iterations / 1000);
  }
  samples.sort((a, b) => a - b);
  const median = samples[2] as number;
  void label;
  return median;
}

function row(name: string, ours: number, raw: number, unit = "µs/op"): void {
  const ratio = ours / raw;
  console.log(
    `${name.padEnd(44)} ${ours.toFixed(1).padStart(9)} ${raw.toFixed(1).padStart(9)}  ${unit.padEnd(8)} ${ratio.toFixed(2)}x`,
  );
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-db-"));
  const db = await HostDatabase.open(join(dir, "platform"));
  const raw = new ClassicLevel<Buffer, string>(join(dir, "raw"), {
    keyEncoding: "buffer",
    valueEncoding: "utf8",
  });
  await raw.open();
  const deployment = await db.deployment("bench");
  await deployment.migrate(SCHEMA);

  // Insert throughput: platform (row + by_creation + 2 declared indexes) vs raw batch of the same 4 puts per row.
  const insertRounds = ROWS / INSERT_BATCH;
  let next = 0;
  const insertStart = process.hrtime.bigint();
  for (let r = 0; r < insertRounds; r++) {
    await deployment.mutate(async (tx) => {
      for (let i = 0; i < INSERT_BATCH; i++) await tx.insert("items", makeRow(next++));
    });
  }
  const oursInsert = (ROWS / Number(process.hrtime.bigint() - insertStart)) * 1e9;

  const rawKeys: Buffer[] = [];
  let rawNext = 0;
  const rawStart = process.hrtime.bigint();
  for (let r = 0; r < insertRounds; r++) {
    const batch = raw.batch();
    for (let i = 0; i < INSERT_BATCH; i++) {
      const n = rawNext++;
      const value = JSON.stringify({
        id: randomBytes(16).toString("base64url"),
        createdAt: Date.now(),
        ...makeRow(n),
      });
      const key = Buffer.from(`r/${String(n).padStart(8, "0")}`);
      rawKeys.push(key);
      batch.put(key, value);
      batch.put(Buffer.from(`c/${String(n).padStart(8, "0")}`), value);
      batch.put(Buffer.from(`o/user${n % 50}/${String(n).padStart(8, "0")}`), value);
      batch.put(
        Buffer.from(`s/${String((n * 7919) % 1000).padStart(4, "0")}/${String(n).padStart(8, "0")}`),
        value,
      );
    }
    await batch.write();
  }
  const rawInsert = (ROWS / Number(process.hrtime.bigint() - rawStart)) * 1e9;

  const { value: ids } = await deployment.query(async (tx) => {
    const out = await tx.query(
      { table: "items", index: "by_creation", range: [], order: "asc" },
      { kind: "take", n: 1000 },
    );
    return out.kind === "rows" ? out.rows.map((r) => (JSON.parse(r) as { id: string }).id) : [];
  });

  let k = 0;
  const oursGet = await timeIt("get", 2000, () =>
    deployment.query((tx) => tx.get("items", ids[k++ % ids.length] as string)),
  );
  let rk = 0;
  const rawGet = await timeIt("raw get", 2000, async () => {
    const snapshot = raw.snapshot();
    await raw.get(rawKeys[rk++ % 1000] as Buffer, { snapshot });
    await snapshot.close();
  });
  const { value: oursGetInTx } = await deployment.query(
    (tx) => timeIt("get in tx", 5000, () => tx.get("items", ids[k++ % ids.length] as string)),
    { budget: UNLIMITED_BUDGET },
  );
  const rawGetBare = await timeIt("raw get bare", 5000, () => raw.get(rawKeys[rk++ % 1000] as Buffer));

  const takeSpec = { table: "items", index: "by_owner", range: [], order: "asc" as const };
  const oursTake = await timeIt("take(1000)", 200, () =>
    deployment.query((tx) => tx.query(takeSpec, { kind: "take", n: 1000 })),
  );
  const rawTake = await timeIt("raw seek+nextv(1000)", 200, async () => {
    const snapshot = raw.snapshot();
    const it = raw.iterator({
      gte: Buffer.from("o/"),
      lt: Buffer.from("o0"),
      snapshot,
      highWaterMarkBytes: HWM,
    });
    let got = 0;
    while (got < 1000) {
      const batch = await it.nextv(1000 - got);
      if (batch.length === 0) break;
      got += batch.length;
    }
    if (got !== 1000) throw new Error(`raw scan read ${got} entries`);
    await it.close();
    await snapshot.close();
  });

  const countSpec = {
    table: "items",
    index: "by_score",
    range: [{ op: "lt" as const, field: "score", value: 250 }],
    order: "asc" as const,
  };
  const { value: counted } = await deployment.query((tx) => tx.query(countSpec, { kind: "count" }));
  const oursCount = await timeIt("count()", 100, () =>
    deployment.query((tx) => tx.query(countSpec, { kind: "count" })),
  );
  const rawCount = await timeIt("raw keys nextv", 100, async () => {
    const snapshot = raw.snapshot();
    const it = raw.iterator({
      gte: Buffer.from("s/0000"),
      lt: Buffer.from("s/0250"),
      snapshot,
      values: false,
      highWaterMarkBytes: KEY_HWM,
    });
    let n = 0;
    for (;;) {
      const batch = await it.nextv(1000);
      if (batch.length === 0) break;
      n += batch.length;
    }
    await it.close();
    await snapshot.close();
    return n;
  });

  console.log(`bench/db on ${process.platform} ${process.arch}, Node ${process.version}, ${ROWS} rows`);
  console.log(
    `${"operation".padEnd(44)} ${"platform".padStart(9)} ${"raw".padStart(9)}  ${"unit".padEnd(8)} ratio (platform/raw)`,
  );
  row("get by id (one query transaction each)", oursGet, rawGet);
  row("get by id (inside an open transaction)", oursGetInTx, rawGetBare);
  row("take(1000) on an index", oursTake, rawTake);
  row(`count() over ${(counted as { count: number }).count} entries`, oursCount, rawCount);
  console.log(
    `${"insert, row + 3 index entries (rows/s)".padEnd(44)} ${oursInsert.toFixed(0).padStart(9)} ${rawInsert.toFixed(0).padStart(9)}  ${"rows/s".padEnd(8)} ${((oursInsert / rawInsert) * 100).toFixed(0)}% of raw batch()`,
  );

  await db.close();
  await raw.close();
  await rm(dir, { recursive: true, force: true });
}

await main();
