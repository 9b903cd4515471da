import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { capsule, number, table } from "../../sdk/server/index.js";
import { tempDatabase } from "../../test/helpers/db.js";
import { idempotencyPrefix, type TenantDatabase } from "../db/index.js";
import { collect } from "../db/kv/index.js";
import { IdempotencySweeper, IdempotentMutation } from "./idempotency.js";

const app = capsule({ schema: { items: table({ n: number() }) } });
const WINDOW = LIMITS.idempotencyKeyMs;
/** A time at the very start of a window, so `+ WINDOW - 1` stays in it. */
const START = Math.ceil(Date.now() / WINDOW) * WINDOW;

let env: Awaited<ReturnType<typeof tempDatabase>>;
let deployment: TenantDatabase;
let runs = 0;

beforeEach(async () => {
  env = await tempDatabase();
  deployment = await env.db.deployment("app");
  await deployment.migrate(app.declaration.schema);
  runs = 0;
});
afterEach(() => env.dispose());

/** Sends the keyed mutation "add" as `caller` at time `now`; answers its value and whether it ran. */
async function send(now: number, key = "k1", caller = "alice", db = deployment) {
  const mutation = new IdempotentMutation(db === deployment ? "app" : "app2", caller, key, "add", "{}", now);
  const before = runs;
  const result = await db.mutate((tx) =>
    mutation.run(tx, async () => {
      runs++;
      await tx.insert("items", { n: runs });
      return JSON.stringify(runs);
    }),
  );
  return { value: result.value, ran: runs > before };
}

async function recordsOf(id: string): Promise<number> {
  const prefix = idempotencyPrefix(id);
  const end = Buffer.concat([prefix, Buffer.from([0xff])]);
  return (await collect(env.db.store.iterate({ gte: prefix, lt: end }))).length;
}

describe("idempotency records over time", () => {
  it("names the records it reads before the handler runs: a group on PostgreSQL reads them ahead", async () => {
    const mutation = new IdempotentMutation("app", "alice", "k9", "add", "{}", START);
    const read: string[] = [];
    await deployment.mutate(async (tx) => {
      const readKey = tx.readKey.bind(tx);
      tx.readKey = (key) => {
        read.push(key.toString("hex"));
        return readKey(key);
      };
      return mutation.run(tx, async () => {
        expect(read).toEqual(mutation.recordKeys().map((key) => key.toString("hex")));
        return "1";
      });
    });
    expect(read).toHaveLength(2);
  });

  it("answers a repeat for at least the remembered time, then runs the mutation again", async () => {
    expect(await send(START)).toEqual({ value: "1", ran: true });
    // The same window, the last moment of the next one: the first call's answer, no new run.
    expect(await send(START + WINDOW - 1)).toEqual({ value: "1", ran: false });
    expect(await send(START + 2 * WINDOW - 1)).toEqual({ value: "1", ran: false });
    // Two windows on, the record is no longer looked at: a late retry is a new mutation.
    expect(await send(START + 2 * WINDOW)).toEqual({ value: "2", ran: true });
  });

  it("sweeps records older than the last three windows, of that deployment only", async () => {
    const other = await env.db.deployment("app2");
    await other.migrate(app.declaration.schema);
    for (let window = 0; window < 5; window++) {
      await send(START + window * WINDOW, `key${window}`);
      await send(START + window * WINDOW, `key${window}`, "alice", other);
    }
    expect(await recordsOf("app")).toBe(5);
    const sweeper = new IdempotencySweeper(env.db.store);
    sweeper.noteMutation("app", START + 4 * WINDOW);
    // The sweep runs in the background: wait until it has.
    for (let i = 0; i < 200 && (await recordsOf("app")) !== 3; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(await recordsOf("app")).toBe(3);
    expect(await recordsOf("app2")).toBe(5);
    // The windows kept are the newest: their keys still answer without running again.
    expect((await send(START + 4 * WINDOW, "key3")).ran).toBe(false);
    expect((await send(START + 4 * WINDOW, "key1")).ran).toBe(true);
  });
});
