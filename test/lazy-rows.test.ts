/**
 * Rows read by a handler stay JSON text until it touches them (runtime/lazy-rows.ts). Over real
 * HTTP and real isolates, on both transports: a handler that returns rows untouched answers
 * exactly what one that parses and copies them answers, for scans, pages and stored text full of
 * escapes; rows a handler changes come back changed.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeOnBothTransports, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, number, string } from "platform/server";
const copy = (rows) => rows.map((row) => ({ ...row }));
export default capsule({
  schema: { items: table({ title: string(), n: number() }) },
  queries: {
    take: async (ctx, args) => ctx.db.items.take(args.n),
    takeCopied: async (ctx, args) => copy(await ctx.db.items.take(args.n)),
    collect: async (ctx) => ({ all: await ctx.db.items.collect(), again: await ctx.db.items.collect() }),
    collectCopied: async (ctx) => ({ all: copy(await ctx.db.items.collect()), again: copy(await ctx.db.items.collect()) }),
    page: async (ctx, args) => ctx.db.items.paginate(args.opts),
    pageCopied: async (ctx, args) => {
      const page = await ctx.db.items.paginate(args.opts);
      return { page: copy(page.page), isDone: page.isDone, continueCursor: page.continueCursor };
    },
    changed: async (ctx) => {
      const rows = await ctx.db.items.take(3);
      rows[0].title = "changed";
      rows.push({ extra: true });
      return { length: rows.length, isArray: Array.isArray(rows), rows };
    },
    sorted: async (ctx) => (await ctx.db.items.collect()).sort((a, b) => b.n - a.n).map((row) => row.n),
  },
  mutations: {
    add: async (ctx, args) => ctx.db.items.insert({ title: args.title, n: args.n }),
  },
});
`;

const TITLES = [
  'quotes " and \\\\ backslashes',
  "line\nbreak, tab\t, \u2028 separator",
  "é, 漢字, 🎉",
  "control \u0001 and \u007f characters",
  "\\u0000platform-rows\\u00000 look-alike",
  "plain",
];

let code: string;

beforeAll(async () => {
  code = await sourceCode(CAPSULE);
});

describeOnBothTransports((inline) => {
  let host: TestHost;

  beforeAll(async () => {
    host = await startTestHost({ pool: { inline } });
    const deployed = await host.deployCode("rows", code);
    expect(deployed.status, deployed.text()).toBe(201);
    for (const [n, title] of TITLES.entries()) {
      const added = await host.call("rows", "mutation", "add", { title, n: n + 0.5 });
      expect(added.status, added.text()).toBe(200);
    }
  });
  afterAll(async () => {
    await host.dispose();
  });

  async function text(name: string, args: unknown = {}): Promise<string> {
    const response = await host.call("rows", "query", name, args);
    expect(response.status, response.text()).toBe(200);
    return response.text();
  }

  it("answers untouched rows byte for byte as parsed and copied ones", async () => {
    for (const n of [0, 1, 4, 100]) expect(await text("take", { n })).toBe(await text("takeCopied", { n }));
    expect(await text("collect")).toBe(await text("collectCopied"));
    // Cursors are sealed afresh on every call, for one handler: the text before them must match.
    const uptoCursor = (answer: string) => answer.slice(0, answer.indexOf('"continueCursor"'));
    const pages = async (name: string) => {
      const first = await text(name, { opts: { numItems: 4, cursor: null } });
      const cursor = (JSON.parse(first) as { value: { continueCursor: string } }).value.continueCursor;
      return [first, await text(name, { opts: { numItems: 4, cursor } })];
    };
    const [first = "", rest = ""] = await pages("page");
    expect((await pages("pageCopied")).map(uptoCursor)).toEqual([uptoCursor(first), uptoCursor(rest)]);
    expect(uptoCursor(rest)).toContain('"isDone":true');
    const titles = [first, rest].flatMap(
      (answer) => (JSON.parse(answer) as { value: { page: { title: string }[] } }).value.page,
    );
    expect(titles.map((row) => row.title)).toEqual(TITLES);
  });

  it("gives back rows a handler changed, as changed", async () => {
    const answer = JSON.parse(await text("changed")) as {
      value: { length: number; isArray: boolean; rows: Array<{ title?: string; extra?: boolean }> };
    };
    expect(answer.value.length).toBe(4);
    expect(answer.value.isArray).toBe(true);
    expect(answer.value.rows[0]?.title).toBe("changed");
    expect(answer.value.rows[1]?.title).toBe(TITLES[1]);
    expect(answer.value.rows[3]).toEqual({ extra: true });
    expect(JSON.parse(await text("sorted")).value).toEqual(TITLES.map((_, n) => n + 0.5).reverse());
  });
});
