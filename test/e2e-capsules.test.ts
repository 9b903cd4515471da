/**
 * End-to-end: a real host on a free port, real HTTP, real isolates, fixture capsules deployed
 * through the operator API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_ISOLATE_LIMITS } from "../host/isolates/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  // Room for CPU time: `bulk` inserts 1,100 rows in one call, which a busy machine may stretch
  // toward the default second, and no test here is about that limit.
  host = await startTestHost({
    pool: { limits: { ...DEFAULT_ISOLATE_LIMITS, cpuMs: 60_000, wallMs: 120_000 } },
  });
  for (const [id, fixture] of [
    ["todo", "todo"],
    ["rel", "relations"],
    ["sink", "kitchen-sink"],
  ] as const) {
    const response = await host.deployFixture(id, fixture);
    expect(response.status, response.text()).toBe(201);
  }
});
afterAll(() => host.dispose());

const value = async (response: Promise<{ status: number; json<T>(): T; text(): string }>) => {
  const r = await response;
  expect(r.status, r.text()).toBe(200);
  return r.json<{ value: unknown }>().value;
};

describe("todo capsule", () => {
  it("adds, lists, toggles and removes", async () => {
    const id = (await value(host.call("todo", "mutation", "add", { text: "write tests" }))) as string;
    await value(host.call("todo", "mutation", "add", { text: "ship" }));
    expect(
      ((await value(host.call("todo", "query", "list"))) as Array<{ text: string }>).map((t) => t.text),
    ).toEqual(["ship", "write tests"]);
    expect(await value(host.call("todo", "mutation", "toggle", { id }))).toBe(true);
    expect(
      ((await value(host.call("todo", "query", "open"))) as Array<{ text: string }>).map((t) => t.text),
    ).toEqual(["ship"]);
    await value(host.call("todo", "mutation", "remove", { id }));
    expect(await value(host.call("todo", "query", "get", { id }))).toBeNull();
    expect(await value(host.call("todo", "query", "count"))).toBe(1);
  });

  it("answers unknown handlers and bad bodies with the error envelope", async () => {
    const missing = await host.call("todo", "query", "nope");
    expect(missing.status).toBe(404);
    expect(missing.json()).toEqual({
      error: { code: "not_found", message: 'No query named "nope" in deployment todo.' },
    });
    const bad = await host.call("todo", "mutation", "toggle", { id: "x" });
    expect(bad.status).toBe(500);
    expect(bad.json()).toEqual({ error: { code: "handler_error", message: "Uncaught Error: No todo x" } });
  });
});

describe("relations capsule (docs/capsules.md)", () => {
  it("follows one-to-many and many-to-many relations", async () => {
    const ids = (await value(host.call("rel", "mutation", "seed"))) as Record<string, string>;
    expect(await value(host.call("rel", "query", "booksOf", { author: ids.ann }))).toEqual([
      "A1",
      "A2",
      "A3",
    ]);
    expect(await value(host.call("rel", "query", "withAuthors"))).toEqual([
      { title: "A1", author: "Ann" },
      { title: "A2", author: "Ann" },
      { title: "A3", author: "Ann" },
      { title: "B1", author: "Bob" },
    ]);
    expect(await value(host.call("rel", "query", "coursesOf", { student: ids.s1 }))).toEqual(["Art", "Math"]);
    expect(await value(host.call("rel", "query", "studentsOf", { course: ids.math }))).toEqual([
      "Kim",
      "Sam",
    ]);
  });
});

describe("every ctx.db operation through the isolate", () => {
  beforeAll(async () => {
    for (const n of [5, 1, 3, 2, 4])
      await value(
        host.call("sink", "mutation", "insert", { n, tag: "a", ...(n % 2 ? { note: `odd ${n}` } : {}) }),
      );
    await value(host.call("sink", "mutation", "bulk", { count: 1100 }));
  });

  it("ranges, order, first, count, take, get, update, delete", async () => {
    expect(await value(host.call("sink", "query", "range", { tag: "a", op: "gt", n: 2 }))).toEqual([3, 4, 5]);
    expect(
      await value(host.call("sink", "query", "range", { tag: "a", op: "gte", n: 2, order: "desc" })),
    ).toEqual([5, 4, 3, 2]);
    expect(await value(host.call("sink", "query", "range", { tag: "a", op: "lt", n: 3 }))).toEqual([1, 2]);
    expect(await value(host.call("sink", "query", "range", { tag: "a", op: "lte", n: 3 }))).toEqual([
      1, 2, 3,
    ]);
    expect(await value(host.call("sink", "query", "between", { tag: "a", lo: 2, hi: 5 }))).toEqual([2, 3, 4]);
    expect(await value(host.call("sink", "query", "latest", { tag: "a" }))).toBe(5);
    expect(await value(host.call("sink", "query", "count", { tag: "a" }))).toBe(5);
    expect(await value(host.call("sink", "query", "withoutNote"))).toBe(1102);
    expect(await value(host.call("sink", "query", "take", { n: 7 }))).toBe(7);
    const id = (await value(
      host.call("sink", "mutation", "insert", { n: 9, tag: "b", note: "x" }),
    )) as string;
    await value(host.call("sink", "mutation", "update", { id, patch: { n: 10, note: null, flag: true } }));
    expect(await value(host.call("sink", "query", "get", { id }))).toMatchObject({
      n: 10,
      flag: true,
      tag: "b",
    });
    expect(await value(host.call("sink", "query", "get", { id }))).not.toHaveProperty("note");
    await value(host.call("sink", "mutation", "remove", { id }));
    expect(await value(host.call("sink", "query", "get", { id }))).toBeNull();
  });

  it("paginates across separate requests, every row once", async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 20; i++) {
      const page = (await value(host.call("sink", "query", "page", { cursor, numItems: 300 }))) as {
        ns: number[];
        isDone: boolean;
        continueCursor: string;
      };
      seen.push(...page.ns);
      cursor = page.continueCursor;
      if (page.isDone) break;
    }
    expect(seen).toEqual(Array.from({ length: 1100 }, (_, i) => i));
    const tampered = await host.call("sink", "query", "page", {
      cursor: `${cursor?.slice(0, -2)}xx`,
      numItems: 10,
    });
    expect(tampered.status).toBe(400);
    expect(tampered.json<{ error: { code: string } }>().error.code).toBe("invalid_cursor");
  });

  it("delivers the exact budget messages to the client", async () => {
    const collect = await host.call("sink", "query", "collectAll");
    expect(collect.status).toBe(429);
    expect(collect.json()).toEqual({
      error: {
        code: "limit_exceeded",
        message: "collect() exceeded the 1000 row return limit. Use paginate().",
      },
    });
    const twice = await host.call("sink", "query", "twoTakes");
    expect(twice.json()).toEqual({
      error: { code: "limit_exceeded", message: "Database rowsReturned limit exceeded (1000)." },
    });
  });

  it("rolls back a mutation that throws, including after a budget error", async () => {
    const before = await value(host.call("sink", "query", "count", { tag: "doomed" }));
    const thrown = await host.call("sink", "mutation", "insertThenThrow");
    expect(thrown.json()).toEqual({
      error: { code: "handler_error", message: "Uncaught Error: changed my mind" },
    });
    const overRead = await host.call("sink", "mutation", "insertThenOverRead");
    expect(overRead.json<{ error: { message: string } }>().error.message).toBe(
      "collect() exceeded the 1000 row return limit. Use paginate().",
    );
    expect(await value(host.call("sink", "query", "count", { tag: "doomed" }))).toBe(before);
  });

  it("refuses writes from queries and invalid values", async () => {
    const sneaky = await host.call("sink", "query", "sneakyWrite");
    expect(sneaky.status).toBe(403);
    expect(sneaky.json<{ error: { code: string } }>().error.code).toBe("forbidden");
    const bad = await host.call("sink", "mutation", "bad");
    expect(bad.json()).toEqual({
      error: { code: "bad_request", message: "Invalid value for items.n: NaN and Infinity are not allowed." },
    });
  });

  it("names the table, the method and what was given for a row id that is not a string", async () => {
    for (const [kind, name, args, message] of [
      ["query", "get", {}, "items.get() needs a row id (a string), got undefined."],
      ["query", "get", { id: 42 }, "items.get() needs a row id (a string), got 42."],
      ["mutation", "remove", { id: { id: "x" } }, "items.delete() needs a row id (a string), got an object."],
    ] as const) {
      const refused = await host.call("sink", kind, name, args);
      expect(refused.status, name).toBe(400);
      expect(refused.json(), name).toEqual({ error: { code: "bad_request", message } });
    }
  });

  it("freezes the clock and seeds Math.random per execution", async () => {
    const a = (await value(host.call("sink", "query", "clock"))) as {
      now: number;
      date: number;
      random: number[];
    };
    expect(a.date).toBe(a.now);
    expect(a.random[0]).not.toBe(a.random[1]);
    expect(Math.abs(a.now - Date.now())).toBeLessThan(60_000);
  });
});
