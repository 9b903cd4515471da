/**
 * A mutation's writes are bounded like its reads: every write is held in memory until the commit
 * and costs the host's main thread its index entries. Before, one mutation inserting 20,000 rows
 * held the main thread for seconds, and a table could declare 500 indexes. Real host, real
 * isolates, over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_ISOLATE_LIMITS } from "../host/isolates/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, number, string } from "platform/server";
export default capsule({
  schema: {
    rows: table({ n: number(), text: string(), body: string().optional() }).index("by_n", ["n"]).index("by_text", ["text"]).index("by_both", ["text", "n"]),
  },
  queries: { withN: async (ctx, args) => ctx.db.rows.withIndex("by_n", (q) => q.eq("n", args.n)).count() },
  mutations: {
    insertMany: async (ctx, args) => {
      // The bulk goes in a field no index holds: an index entry's key is at most 2048 bytes.
      for (let i = 0; i < args.count; i++) await ctx.db.rows.insert({ n: i, text: "t" + i, body: "t".repeat(args.size) });
      return args.count;
    },
    churn: async (ctx, args) => {
      const id = await ctx.db.rows.insert({ n: -1, text: "x" });
      for (let i = 0; i < args.count; i++) await ctx.db.rows.update(id, { n: i });
      return "patched";
    },
  },
});
`;

let host: TestHost;

beforeAll(async () => {
  // The budgets under test are the database's: a mutation making 8192 writes must meet them, not
  // the CPU limit, however busy the machine (CI charged one 8192-patch run over 1000 ms once).
  host = await startTestHost({
    pool: { limits: { ...DEFAULT_ISOLATE_LIMITS, cpuMs: 60_000, wallMs: 120_000 } },
  });
  expect((await host.deployCode("writes", await sourceCode(CAPSULE))).status).toBe(201);
}, 60_000);
afterAll(() => host.dispose());

/** Rows with field n = `n`: each committed insertMany makes one of each n below its count. */
async function withN(n: number): Promise<number> {
  const response = await host.call("writes", "query", "withN", { n });
  expect(response.status, response.text()).toBe(200);
  return response.json<{ value: number }>().value;
}

describe("a mutation's write budget", () => {
  it("commits as many writes as the budget allows, each with its index entries", async () => {
    const response = await host.call("writes", "mutation", "insertMany", {
      count: LIMITS.rowsWritten,
      size: 8,
    });
    expect(response.status, response.text()).toBe(200);
    expect(await withN(0)).toBe(1);
    expect(await withN(LIMITS.rowsWritten - 1)).toBe(1);
  }, 120_000);

  it("refuses one write more, and commits none of them", async () => {
    const response = await host.call("writes", "mutation", "insertMany", {
      count: LIMITS.rowsWritten + 1,
      size: 8,
    });
    expect(response.status).toBe(429);
    const { error } = response.json<{ error: { code: string; message: string } }>();
    expect(error.code).toBe("limit_exceeded");
    expect(error.message).toBe(`Database rowsWritten limit exceeded (${LIMITS.rowsWritten}).`);
    expect(await withN(0)).toBe(1);
    expect(await withN(LIMITS.rowsWritten)).toBe(0);
    // Patches of one row count too: each is a write held until the commit.
    const churn = await host.call("writes", "mutation", "churn", { count: LIMITS.rowsWritten });
    expect(churn.status, churn.text()).toBe(429);
    expect(await withN(0)).toBe(1);
    expect(await withN(LIMITS.rowsWritten - 1)).toBe(1);
  }, 120_000);

  it("refuses a mutation writing more row bytes than the budget", async () => {
    const size = 512 * 1024;
    const rows = Math.ceil(LIMITS.bytesWritten / size) + 1;
    const response = await host.call("writes", "mutation", "insertMany", { count: rows, size });
    expect(response.status).toBe(429);
    expect(response.json<{ error: { message: string } }>().error.message).toBe(
      `Database bytesWritten limit exceeded (${LIMITS.bytesWritten}).`,
    );
    expect(await withN(0)).toBe(1);
  }, 120_000);

  it("counts the keys a mutation holds, its entries' and their counts', in the budget (found by review)", async () => {
    // 32 indexes of 16 fields each, led by a 1,950-character string: a row moves 512 counts of about
    // 2 KB and writes 32 index keys of as much. Counting rows alone, 230 such rows fit the budget and
    // held 550 MiB of the host's heap until the commit; eight deployments at once ended the host.
    const flags = Array.from({ length: 15 }, (_, i) => `b${i}: boolean().optional()`).join(", ");
    const fields = JSON.stringify(["s", ...Array.from({ length: 15 }, (_, i) => `b${i}`)]);
    const indexes = Array.from({ length: 32 }, (_, i) => `.index("i${i}", ${fields})`).join("");
    const code = await sourceCode(`import { capsule, table, string, boolean } from "platform/server";
export default capsule({
  schema: { wide: table({ s: string(), ${flags} })${indexes} },
  mutations: {
    fill: async (ctx, args) => {
      for (let i = 0; i < args.rows; i++) await ctx.db.wide.insert({ s: String(i).padStart(1950, "x") });
      return args.rows;
    },
  },
});
`);
    expect((await host.deployCode("wide", code)).status).toBe(201);
    const refused = await host.call("wide", "mutation", "fill", { rows: 230 });
    expect(refused.status, refused.text()).toBe(429);
    expect(refused.json<{ error: { message: string } }>().error.message).toBe(
      `Database bytesWritten limit exceeded (${LIMITS.bytesWritten}).`,
    );
    // A few such rows still go in.
    const few = await host.call("wide", "mutation", "fill", { rows: 4 });
    expect(few.status, few.text()).toBe(200);
  }, 120_000);

  it("refuses a table with more than 32 indexes at deploy, saying what to do", async () => {
    const indexes = Array.from({ length: 33 }, (_, i) => `.index("i${i}", ["n"])`).join("");
    const code = await sourceCode(`import { capsule, table, number } from "platform/server";
export default capsule({ schema: { t: table({ n: number() })${indexes} } });
`);
    const response = await host.deployCode("many-indexes", code);
    expect(response.status).toBe(400);
    expect(response.json<{ error: { message: string } }>().error.message).toContain(
      "table t has 33 indexes and 0 userId() fields, each of which keeps an index of its own; at most 32 are allowed together",
    );
  }, 60_000);

  it("refuses a schema of more than 1000 tables, or a table of more than 1024 fields, saying what to do", async () => {
    const tables = Array.from({ length: 1001 }, (_, i) => `t${i}: table({ n: number() })`).join(", ");
    const wide = Array.from({ length: 1025 }, (_, i) => `f${i}: number().optional()`).join(", ");
    for (const [schema, message] of [
      [tables, "the schema has 1001 tables; at most 1000 are allowed. Keep related data in one table"],
      [`t: table({ ${wide} })`, "table t has 1025 fields; at most 1024 are allowed. Split it into tables"],
    ]) {
      const code = await sourceCode(`import { capsule, table, number } from "platform/server";
export default capsule({ schema: { ${schema} } });
`);
      const response = await host.deployCode("too-big", code);
      expect(response.status).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message).toContain(message);
    }
  }, 60_000);

  it("counts the hidden index of each userId() field: 200 of them would write 200 copies of each row", async () => {
    const owners = Array.from({ length: 200 }, (_, i) => `o${i}: userId().optional()`).join(", ");
    const code = await sourceCode(`import { capsule, table, number, userId } from "platform/server";
export default capsule({ schema: { t: table({ n: number(), ${owners} }).index("by_n", ["n"]) } });
`);
    const response = await host.deployCode("many-owners", code);
    expect(response.status).toBe(400);
    expect(response.json<{ error: { message: string } }>().error.message).toContain(
      "Invalid schema: table t has 1 indexes and 200 userId() fields, each of which keeps an index of its own; at most 32 are allowed together. Drop the indexes no query uses, or keep user ids in fewer fields.",
    );
    // 31 of them and one index fit.
    const fits = Array.from({ length: 31 }, (_, i) => `o${i}: userId().optional()`).join(", ");
    const fitting = await sourceCode(`import { capsule, table, number, userId } from "platform/server";
export default capsule({ schema: { t: table({ n: number(), ${fits} }).index("by_n", ["n"]) } });
`);
    expect((await host.deployCode("many-owners", fitting)).status).toBe(201);
  }, 60_000);

  it("refuses more than 256 userId() fields in one schema: a guest's sign-in searches each one", async () => {
    // 500 tables of 31 such fields made each sign-in of a guest run 15,500 index searches under the
    // deployment's write lock (28-38 s).
    const tables = (count: number) =>
      Array.from(
        { length: count },
        (_, t) =>
          `t${t}: table({ ${Array.from({ length: 16 }, (_, f) => `o${f}: userId().optional()`).join(", ")} })`,
      ).join(", ");
    const deploy = async (count: number) =>
      host.deployCode(
        "many-owner-tables",
        await sourceCode(`import { capsule, table, userId } from "platform/server";
export default capsule({ schema: { ${tables(count)} } });
`),
      );
    const refused = await deploy(17);
    expect(refused.status).toBe(400);
    expect(refused.json<{ error: { message: string } }>().error.message).toContain(
      "Invalid schema: the schema has more than 256 userId() fields (t16 passes it); at most 256 are allowed, all tables together. Signing a guest in searches each of them for the guest's rows: keep user ids in fewer fields.",
    );
    expect((await deploy(16)).status).toBe(201);
  }, 60_000);
});

describe("the references a mutation's writes check", () => {
  it(`are counted: past ${LIMITS.referencesChecked} the mutation fails with 429 and writes nothing`, async () => {
    const FIELDS = 20;
    const refs = Array.from({ length: FIELDS }, (_, i) => `r${i}: id("targets")`).join(", ");
    const code = await sourceCode(`import { capsule, table, id, number } from "platform/server";
export default capsule({
  schema: { targets: table({ n: number() }), links: table({ ${refs} }) },
  queries: { links: async (ctx) => ctx.db.links.count() },
  mutations: {
    link: async (ctx, args) => {
      const target = await ctx.db.targets.insert({ n: 1 });
      const row = {};
      for (let i = 0; i < ${FIELDS}; i++) row["r" + i] = target;
      for (let i = 0; i < args.rows; i++) await ctx.db.links.insert(row);
      return args.rows;
    },
  },
});
`);
    expect((await host.deployCode("references", code)).status).toBe(201);
    const fits = Math.floor(LIMITS.referencesChecked / FIELDS);
    const over = await host.call("references", "mutation", "link", { rows: fits + 1 });
    expect(over.status).toBe(429);
    expect(over.json<{ error: { message: string } }>().error.message).toBe(
      `Database referencesChecked limit exceeded (${LIMITS.referencesChecked}).`,
    );
    expect((await host.call("references", "query", "links")).json()).toEqual({ value: 0 });
    const ok = await host.call("references", "mutation", "link", { rows: fits });
    expect(ok.status, ok.text()).toBe(200);
    expect((await host.call("references", "query", "links")).json()).toEqual({ value: fits });
  }, 120_000);
});

describe("a deployment's row storage quota, over HTTP", () => {
  it("refuses a mutation that would store past it with 413 quota_exceeded, and takes writes again after deletes", async () => {
    const small = await startTestHost({ databaseQuota: { rowBytesPerDeployment: 64 * 1024 } });
    try {
      const source = `import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { notes: table({ text: string() }) },
  queries: { count: async (ctx) => ctx.db.notes.count() },
  mutations: {
    add: async (ctx, args) => ctx.db.notes.insert({ text: "n".repeat(args.size) }),
    clear: async (ctx) => { for (const note of await ctx.db.notes.take(1000)) await ctx.db.notes.delete(note.id); return "cleared"; },
  },
});
`;
      expect((await small.deployCode("full", await sourceCode(source))).status).toBe(201);
      let added = 0;
      let refused: Awaited<ReturnType<TestHost["call"]>> | undefined;
      while (!refused && added < 100) {
        const response = await small.call("full", "mutation", "add", { size: 4096 });
        if (response.status === 200) added++;
        else if (response.status !== 413) throw new Error(response.text());
        else refused = response;
      }
      expect(refused?.status, refused?.text()).toBe(413);
      expect(refused?.json<{ error: { code: string } }>().error.code).toBe("quota_exceeded");
      expect(added).toBeGreaterThan(0);
      // Nothing of the refused mutation was written.
      expect((await small.call("full", "query", "count")).json<{ value: number }>().value).toBe(added);
      const cleared = await small.call("full", "mutation", "clear");
      expect(cleared.status, cleared.text()).toBe(200);
      const again = await small.call("full", "mutation", "add", { size: 4096 });
      expect(again.status, again.text()).toBe(200);
    } finally {
      await small.dispose();
    }
  }, 60_000);
});
