/**
 * Scans answered from the embedded store's memo (host/db/kv/scan-memo.ts) over HTTP, through real
 * isolates: readers between two writes share what the first one scanned, and nobody reads past an
 * acknowledged write, one deployment's scans never answer another's, however many readers run at
 * once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, string, number } from "platform/server";
export default capsule({
  schema: { items: table({ list: string(), n: number() }).index("by_list", ["list"]) },
  queries: {
    latest: async (ctx, args) =>
      (await ctx.db.items.withIndex("by_list", (q) => q.eq("list", args.list)).order("desc").take(3)).map((i) => i.n),
    page: async (ctx, args) =>
      ctx.db.items.withIndex("by_list", (q) => q.eq("list", args.list)).paginate({ cursor: args.cursor, numItems: 2 }),
  },
  mutations: {
    add: async (ctx, args) => ctx.db.items.insert({ list: args.list, n: args.n }),
  },
});
`;

let host: TestHost;

function value<T>(response: { status: number; text(): string; json<V>(): V }): T {
  expect(response.status, response.text()).toBe(200);
  return response.json<{ value: T }>().value;
}

beforeAll(async () => {
  host = await startTestHost();
  const code = await sourceCode(CAPSULE);
  for (const id of ["memo-one", "memo-two"]) {
    const deployed = await host.deployCode(id, code);
    expect(deployed.status, deployed.text()).toBe(201);
  }
});
afterAll(async () => {
  await host.dispose();
});

describe("scans answered from the memo", () => {
  it("every read that starts after a write's answer sees it, with readers before and beside it", async () => {
    for (let n = 1; n <= 5; n++) {
      // Readers fill and share the memo of the view before the write ...
      const before = await Promise.all(
        Array.from({ length: 8 }, () => host.call("memo-one", "query", "latest", { list: "a" })),
      );
      for (const answer of before) expect(value<number[]>(answer)[0] ?? 0).toBe(n - 1);
      // ... readers race the write ...
      const racing = Array.from({ length: 8 }, () => host.call("memo-one", "query", "latest", { list: "a" }));
      value(await host.call("memo-one", "mutation", "add", { list: "a", n }));
      for (const answer of await Promise.all(racing))
        expect([n - 1, n]).toContain(value<number[]>(answer)[0] ?? 0);
      // ... and every reader after it sees it.
      const after = await Promise.all(
        Array.from({ length: 8 }, () => host.call("memo-one", "query", "latest", { list: "a" })),
      );
      for (const answer of after)
        expect(value<number[]>(answer)).toEqual([n, n - 1, n - 2].filter((k) => k > 0));
    }
  });

  it("pages read twice are the same pages, and a cursor from one reader goes on for another", async () => {
    for (let n = 1; n <= 5; n++) value(await host.call("memo-one", "mutation", "add", { list: "p", n }));
    type Page = { page: Array<{ n: number }>; isDone: boolean; continueCursor: string };
    const first = value<Page>(await host.call("memo-one", "query", "page", { list: "p", cursor: null }));
    const again = value<Page>(await host.call("memo-one", "query", "page", { list: "p", cursor: null }));
    expect(again.page).toEqual(first.page);
    expect(first.page.map((item) => item.n)).toEqual([1, 2]);
    const second = value<Page>(
      await host.call("memo-one", "query", "page", { list: "p", cursor: again.continueCursor }),
    );
    expect(second.page.map((item) => item.n)).toEqual([3, 4]);
  });

  it("one deployment's scans never answer another's, for the same query and arguments", async () => {
    value(await host.call("memo-one", "mutation", "add", { list: "shared", n: 1 }));
    value(await host.call("memo-two", "mutation", "add", { list: "shared", n: 2 }));
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        host.call(i % 2 === 0 ? "memo-one" : "memo-two", "query", "latest", { list: "shared" }),
      ),
    );
    expect(answers.map((answer) => value<number[]>(answer))).toEqual(
      answers.map((_, i) => [i % 2 === 0 ? 1 : 2]),
    );
  });
});
