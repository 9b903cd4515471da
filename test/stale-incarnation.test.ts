/**
 * A deployment deleted and created again under its id, by another developer, while another host
 * sharing the database has not heard of it yet (its announcement lost, or still on its way, and
 * the periodic check of the records' stamps not come yet): that host still holds the old record
 * and the old code's isolate. Whatever the old code then asks of the database must not reach the
 * new deployment's rows, which are another tenant's.
 */
import { describe, expect, it, vi } from "vitest";
import type { HttpResponse } from "../cli/http.js";
import { HostDatabase, PostgresKv } from "../host/db/index.js";
import { metaKey } from "../host/db/keys.js";
import { capsule, string, table } from "../sdk/server/index.js";
import { typedDb } from "./helpers/db.js";
import { deafTo } from "./helpers/deaf-host.js";
import { sourceCode, type TestHost } from "./helpers/host.js";
import { freshTable, postgresForThisFile, postgresInstalled, recordQueries } from "./helpers/postgres.js";
import { twoHostsForThisFile } from "./helpers/two-hosts.js";

const server = postgresForThisFile("A stale incarnation's calls on another host");
let a: TestHost;
let b: TestHost;

/**
 * Both incarnations name their table `notes`, whose rows are keyed by the table's name: the old
 * code's reads and writes would reach the new one's rows. `keep` answers the new row's id; `note`
 * logs the text it read.
 */
const capsuleOf = (label: string, extra = "") => `import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { notes: table({ text: string() })${extra} },
  queries: {
    label: async () => ${JSON.stringify(label)},
    texts: async (ctx) => (await ctx.db.notes.collect()).map((note) => note.text),
    note: async (ctx, args) => {
      const text = (await ctx.db.notes.get(args.id))?.text ?? null;
      ctx.log.info(\`read \${text}\`);
      return text;
    },
  },
  mutations: {
    add: async (ctx, args) => { await ctx.db.notes.insert({ text: args.text }); return ${JSON.stringify(label)}; },
    keep: async (ctx, args) => ctx.db.notes.insert({ text: args.text }),
  },
});
`;

type ErrorBody = { error?: { code: string } };
const outcome = (response: HttpResponse): [number, unknown] => [
  response.status,
  response.status === 200
    ? response.json<{ value: unknown }>().value
    : response.json<ErrorBody>().error?.code,
];

twoHostsForThisFile(server, (first, second) => {
  a = first;
  b = second;
});

async function developer(name: string): Promise<{ id: string; token: string }> {
  return (await a.admin("/v1/developers", "POST", { name })).json<{ id: string; token: string }>();
}

/** Deployment `id` created through host a with the old code, by a developer of its own. */
async function createdByFirst(id: string): Promise<{ id: string; token: string }> {
  const first = await developer(`${id}-first`);
  const created = await a.admin("/v1/deploys", "POST", {
    id,
    code: await sourceCode(capsuleOf("old code")),
    owner: first.id,
  });
  expect(created.status, created.text()).toBe(201);
  return first;
}

/**
 * Deployment `id` created by one developer and served by host b (record, isolate and database
 * loaded there), then deleted and created again by another developer through host a, with new code
 * and a table of the same name, while b hears nothing of it; the new deployment has a row, whose
 * id is answered with what makes b hear again and the first developer's token.
 */
async function replacedUnheard(id: string): Promise<{ hear: () => void; row: string; first: string }> {
  const first = await createdByFirst(id);
  expect(outcome(await b.call(id, "mutation", "add", { text: "first's note" }))).toEqual([200, "old code"]);
  expect(outcome(await b.call(id, "query", "texts"))).toEqual([200, ["first's note"]]);
  const hear = deafTo(b, id);
  try {
    expect((await a.admin(`/v1/deploys/${id}`, "DELETE")).status).toBe(204);
    const again = await a.admin("/v1/deploys", "POST", {
      id,
      code: await sourceCode(capsuleOf("new code", ", secrets: table({ text: string() })")),
      owner: (await developer(`${id}-second`)).id,
    });
    expect(again.status, again.text()).toBe(201);
    const kept = await a.call(id, "mutation", "keep", { text: "second's note" });
    expect(kept.status, kept.text()).toBe(200);
    // Host b has heard nothing: it still runs the first deployment's code.
    const stale = await b.deployments.get(id);
    expect(stale?.incarnation).toBeDefined();
    expect(stale?.incarnation).not.toBe((await a.deployments.get(id))?.incarnation);
    return { hear, row: kept.json<{ value: string }>().value, first: first.token };
  } catch (error) {
    hear();
    throw error;
  }
}

/** Host `host` serves deployment `id`'s new code, having read its record again. */
async function servesNewCode(host: TestHost, id: string): Promise<void> {
  await vi.waitFor(
    async () => expect(outcome(await host.call(id, "query", "label"))).toEqual([200, "new code"]),
    { timeout: 10_000, interval: 50 },
  );
}

describe.skipIf(!postgresInstalled)("an incarnation replaced while another host heard nothing", () => {
  it("the old code's query on that host is refused before it reads the new deployment's rows", async () => {
    const { hear, row } = await replacedUnheard("read-after");
    try {
      expect(outcome(await b.call("read-after", "query", "note", { id: row }))).toEqual([404, "not_found"]);
      // Refused before the row reached the handler: the old code had nothing to log (its
      // developer reads the logs of the id on b while b takes the deployment for theirs).
      await b.deployments.logs.flush();
      expect(JSON.stringify(b.logs)).toContain("read-after");
      expect(JSON.stringify(b.logs)).not.toContain("second's note");
      // The refusal made b read the record again, though it still hears nothing else.
      await servesNewCode(b, "read-after");
      expect(outcome(await b.call("read-after", "query", "texts"))).toEqual([200, ["second's note"]]);
    } finally {
      hear();
    }
  }, 120_000);

  it("the old code's mutation on that host is refused, and writes nothing into the new deployment", async () => {
    const { hear } = await replacedUnheard("write-after");
    try {
      expect(outcome(await b.call("write-after", "mutation", "add", { text: "old code's note" }))).toEqual([
        404,
        "not_found",
      ]);
      expect(outcome(await a.call("write-after", "query", "texts"))).toEqual([200, ["second's note"]]);
      await servesNewCode(b, "write-after");
      expect(outcome(await b.call("write-after", "mutation", "add", { text: "b's note" }))).toEqual([
        200,
        "new code",
      ]);
      expect(outcome(await a.call("write-after", "query", "texts"))).toEqual([
        200,
        ["second's note", "b's note"],
      ]);
    } finally {
      hear();
    }
  }, 120_000);

  it("the first developer's data browser on that host is refused the new deployment's rows", async () => {
    const { hear, row, first } = await replacedUnheard("browsed-after");
    try {
      const read = await b.admin(
        `/v1/deploys/browsed-after/tables/notes/rows/${row}`,
        "GET",
        undefined,
        first,
      );
      expect(outcome(read)).toEqual([404, "not_found"]);
      await servesNewCode(b, "browsed-after");
      // Read again, the record is the second developer's: the first manages it no more.
      const again = await b.admin(
        `/v1/deploys/browsed-after/tables/notes/rows/${row}`,
        "GET",
        undefined,
        first,
      );
      expect(outcome(again)[0]).not.toBe(200);
    } finally {
      hear();
    }
  }, 120_000);

  it("a deploy through that host creating the id again ends the old one there: none of its log lines", async () => {
    // The first developer's redeploy through b reads the record again under the id's lock and
    // finds none: the old incarnation is gone. Its log lines stayed in b's ring, and the second
    // developer's deploy through b then created the id beside them, for their `platform logs`.
    const id = "logged-before";
    const first = await createdByFirst(id);
    const row = (await b.call(id, "mutation", "keep", { text: "first's secret" })).json<{ value: string }>();
    expect(outcome(await b.call(id, "query", "note", { id: row.value }))).toEqual([200, "first's secret"]);
    const messages = () => b.deployments.logs.recent(id).map((line) => line.message);
    expect(messages()).toContain("read first's secret");
    const hear = deafTo(b, id);
    try {
      expect((await a.admin(`/v1/deploys/${id}`, "DELETE")).status).toBe(204);
      const redeploy = await b.admin(
        `/v1/deploys/${id}`,
        "PUT",
        { code: await sourceCode(capsuleOf("old code")) },
        first.token,
      );
      expect(redeploy.status, redeploy.text()).not.toBe(200);
      const again = await b.admin("/v1/deploys", "POST", {
        id,
        code: await sourceCode(capsuleOf("new code")),
        owner: (await developer(`${id}-second`)).id,
      });
      expect(again.status, again.text()).toBe(201);
      expect(messages().join("\n")).not.toContain("secret");
      expect(outcome(await b.call(id, "query", "label"))).toEqual([200, "new code"]);
    } finally {
      hear();
    }
  }, 120_000);
});

describe.skipIf(!postgresInstalled)("the incarnation's check on PostgreSQL", () => {
  it("costs no round trip: read with a query's first read, and with a mutation's write lock", async () => {
    const app = capsule({ schema: { notes: table({ text: string() }) } });
    const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: freshTable() }));
    try {
      const deployment = await db.deployment("costs");
      await deployment.migrate(app.declaration.schema, undefined, {
        switching: { operations: [], incarnation: "one", switched() {} },
      });
      const notes = typedDb(deployment, app);
      const options = { incarnation: "one" };
      const { value: id } = await notes.write((t) => t.notes.insert({ text: "a" }), options);
      // The incarnation's key (host/db/incarnation.ts).
      const mark = metaKey("costs", "incarnation").toString("hex");
      /**
       * The messages `work` sends that read or write the store (not the ends of transactions left
       * open, sent alone or not as it falls, nor the checks of the listener and of the server).
       */
      const messages = async (work: () => Promise<unknown>): Promise<string[]> => {
        const { queries, stop } = recordQueries();
        try {
          await work();
        } finally {
          stop();
        }
        return queries
          .map((query) => query.text)
          .filter((text) => !/^(COMMIT|ROLLBACK|SELECT 1|SELECT pg_notify\(\$1, \$2\))$/.test(text.trim()));
      };
      const point = await messages(() => notes.read((t) => t.notes.get(id), options));
      expect(point).toHaveLength(1);
      expect(point[0]).toContain(mark);
      expect(await messages(() => notes.read((t) => t.notes.collect(), options))).toHaveLength(1);
      // The lock with its reads, then the commit.
      const insert = await messages(() => notes.write((t) => t.notes.insert({ text: "b" }), options));
      expect(insert).toHaveLength(2);
      expect(insert[0]).toContain("pg_advisory_xact_lock");
      expect(insert[0]).toContain(mark);
    } finally {
      await db.close();
    }
  }, 60_000);
});
