/**
 * A handler's scans started at once, on any backend: budgets are charged as rows arrive, so scans
 * run in turn (host/db/query-terminals.ts); 200 of them must not fetch more than one budget's rows.
 */
import { expect } from "vitest";
import type { HostDatabase } from "../../host/db/index.js";
import type { KvStore } from "../../host/db/kv/index.js";
import { capsule, string, table } from "../../sdk/server/index.js";
import { typedDb } from "./db.js";

const app = capsule({ schema: { items: table({ text: string() }) } });

/** Counts the entries `store` hands its readers' scans until `stop()`. */
function countFetched(store: KvStore): { fetched: () => number; stop: () => void } {
  const readSnapshot = store.readSnapshot.bind(store);
  let fetched = 0;
  store.readSnapshot = async () => {
    const snapshot = await readSnapshot();
    const iterate = snapshot.iterate.bind(snapshot);
    snapshot.iterate = (options) => {
      const iterator = iterate(options);
      return {
        next: async (max) => {
          const entries = await iterator.next(max);
          fetched += entries.length;
          return entries;
        },
        close: () => iterator.close(),
      };
    };
    return snapshot;
  };
  return { fetched: () => fetched, stop: () => (store.readSnapshot = readSnapshot) };
}

/** 1,000 rows of 4 KB, then one query starting 200 `take(1000)` at once: it fails having fetched 1,001. */
export async function concurrentScansStayInBudget(db: HostDatabase): Promise<void> {
  const deployment = await db.deployment("scans");
  await deployment.migrate(app.declaration.schema);
  const t = typedDb(deployment, app);
  for (let part = 0; part < 2; part++)
    await t.write(async (d) => {
      for (let i = 0; i < 500; i++) await d.items.insert({ text: "x".repeat(4000) });
    });
  const counter = countFetched(deployment.store);
  try {
    await expect(
      t.read((d) => Promise.all(Array.from({ length: 200 }, () => d.items.take(1000)))),
    ).rejects.toMatchObject({ code: "limit_exceeded" });
    // The first scan's 1,000 rows, then one row that overflows: every other scan is refused.
    expect(counter.fetched()).toBeLessThanOrEqual(1001);
  } finally {
    counter.stop();
  }
}
