/**
 * The dashboard's data routes against a real host (classic-level on disk, real HTTP, real
 * isolates): tables with fields, indexes and exact counts; rows newest first or by an index range,
 * paged by sealed cursors; row inserts, edits and deletes through a mutation's validation, logged
 * as the developer's action and seen by the app's own queries; legacy deployments read-only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS, type RowsAnswer, type TablesAnswer } from "../sdk/protocol/index.js";
import { type DashboardSession, dashboardSignIn, sessionRequest } from "./helpers/dashboard.js";
import { fixtureCode, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

type Row = Record<string, unknown> & { id: string; createdAt: number };

let host: TestHost;
let owner: { id: string; token: string };
let channels: string[];

const rowsUrl = (query: Record<string, unknown> = {}, table = "messages", id = "chat") => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    search.set(key, typeof value === "string" ? value : JSON.stringify(value));
  return `/v1/deploys/${id}/tables/${table}/rows?${search}`;
};

const asOwner = (path: string, method = "GET", body?: unknown) => host.admin(path, method, body, owner.token);

beforeAll(async () => {
  host = await startTestHost();
  owner = (await host.admin("/v1/developers", "POST", { name: "Dana" })).json();
  const code = await fixtureCode("dashboard");
  expect((await host.admin("/v1/deploys", "POST", { id: "chat", code, owner: owner.id })).status).toBe(201);
  const seeded = await host.call("chat", "mutation", "seed", {
    channels: ["general", "random"],
    perChannel: 60,
  });
  expect(seeded.status, seeded.text()).toBe(200);
  channels = seeded.json<{ value: string[] }>().value;
});
afterAll(() => host.dispose());

describe("reading", () => {
  it("describes tables: fields with types, queryable indexes, exact row counts", async () => {
    const answer = (await asOwner("/v1/deploys/chat/tables")).json<TablesAnswer>();
    expect(answer).toMatchObject({ deployment: "chat", apiVersion: "v1", writable: true });
    const messages = answer.tables.find((t) => t.name === "messages");
    expect(messages?.rows).toEqual({ exact: 120 });
    expect(answer.tables.find((t) => t.name === "channels")?.rows).toEqual({ exact: 2 });
    expect(messages?.fields).toEqual([
      { name: "channel", kind: "id", table: "channels", optional: false },
      { name: "author", kind: "userId", optional: true },
      { name: "body", kind: "string", optional: false },
      { name: "likes", kind: "number", optional: false, default: 0 },
      { name: "pinned", kind: "boolean", optional: true },
    ]);
    // The hidden userId() index is the host's, not something to browse by.
    expect(messages?.indexes.map((i) => i.name)).toEqual([
      "by_creation",
      "by_channel",
      "by_likes",
      "by_pinned",
    ]);
    expect((await asOwner("/v1/deploys/chat/totals")).json()).toEqual({ rows: 122, objects: 0, bytes: 0 });
  });

  it("pages through every row newest first, the count on the first page only", async () => {
    const seen: Row[] = [];
    let cursor = "";
    for (let page = 0; page < 10; page++) {
      const answer = (await asOwner(rowsUrl({ numItems: "25", cursor }))).json<RowsAnswer>();
      if (page === 0) expect(answer.count).toEqual({ exact: 120 });
      else expect(answer.count).toBeUndefined();
      seen.push(...(answer.page as Row[]));
      cursor = answer.continueCursor;
      if (answer.isDone) break;
    }
    expect(seen).toHaveLength(120);
    expect(new Set(seen.map((r) => r.id)).size).toBe(120);
    const times = seen.map((r) => r.createdAt);
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("filters by equality (a stored count) and by range (a bounded walk), paged by index", async () => {
    const general = channels[0] as string;
    const byChannel = (
      await asOwner(
        rowsUrl({
          index: "by_channel",
          order: "asc",
          range: [{ op: "eq", field: "channel", value: general }],
          numItems: "100",
        }),
      )
    ).json<RowsAnswer>();
    expect(byChannel.count).toEqual({ exact: 60 });
    expect(byChannel.page).toHaveLength(60);
    expect(byChannel.page.every((r) => r.channel === general)).toBe(true);

    const range = [
      { op: "gte", field: "likes", value: 3 },
      { op: "lte", field: "likes", value: 5 },
    ];
    const first = (
      await asOwner(rowsUrl({ index: "by_likes", order: "asc", range, numItems: "20" }))
    ).json<RowsAnswer>();
    expect(first.count).toEqual({ exact: 36 });
    const second = (
      await asOwner(
        rowsUrl({ index: "by_likes", order: "asc", range, numItems: "20", cursor: first.continueCursor }),
      )
    ).json<RowsAnswer>();
    expect(second.isDone).toBe(true);
    const likes = [...first.page, ...second.page].map((r) => r.likes as number);
    expect(likes).toHaveLength(36);
    expect(likes).toEqual([...likes].sort((a, b) => a - b));
    expect(new Set(likes)).toEqual(new Set([3, 4, 5]));
  });

  it("filters rows where an optional field is absent (eq null), as withIndex does", async () => {
    const absent = (
      await asOwner(
        rowsUrl({
          index: "by_pinned",
          range: [{ op: "eq", field: "pinned", value: null }],
          numItems: "5",
        }),
      )
    ).json<RowsAnswer>();
    expect(absent.count).toEqual({ exact: 120 });
    expect(absent.page.every((r) => !("pinned" in r))).toBe(true);
    const pinned = (
      await asOwner(rowsUrl({ index: "by_pinned", range: [{ op: "eq", field: "pinned", value: true }] }))
    ).json<RowsAnswer>();
    expect(pinned.count).toEqual({ exact: 0 });
    const required = await asOwner(
      rowsUrl({ index: "by_likes", range: [{ op: "eq", field: "likes", value: null }] }),
    );
    expect(required.status).toBe(400);
    expect(required.text()).toContain("can only be used on optional fields");
  });

  it("refuses malformed queries and cursors with the engine's errors", async () => {
    const cases: Array<[Record<string, unknown>, number, string, RegExp]> = [
      [{ index: "by_nothing" }, 400, "bad_request", /Unknown index messages.by_nothing/],
      [
        { index: "by_likes", range: [{ op: "eq", field: "body", value: "x" }] },
        400,
        "bad_request",
        /expected likes/,
      ],
      [
        { index: "by_likes", range: [{ op: "gt", field: "likes", value: "many" }] },
        400,
        "bad_request",
        /Invalid value/,
      ],
      [{ range: "[{" }, 400, "bad_request", /range must be JSON/],
      [{ range: [1] }, 400, "bad_request", /Each range comparison/],
      [{ numItems: "0" }, 400, "bad_request", /numItems/],
      [{ numItems: "101" }, 400, "bad_request", /numItems/],
      [{ order: "sideways" }, 400, "bad_request", /order/],
      [{ cursor: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, 400, "invalid_cursor", /cursor/],
    ];
    for (const [query, status, code, message] of cases) {
      const response = await asOwner(rowsUrl(query));
      expect(response.status, JSON.stringify(query)).toBe(status);
      expect(
        response.json<{ error: { code: string; message: string } }>().error,
        JSON.stringify(query),
      ).toMatchObject({
        code,
        message: expect.stringMatching(message),
      });
    }
    // A cursor made for one range is refused for another.
    const page = (await asOwner(rowsUrl({ numItems: "5" }))).json<RowsAnswer>();
    const other = await asOwner(rowsUrl({ order: "asc", numItems: "5", cursor: page.continueCursor }));
    expect(other.json<{ error: { code: string } }>().error.code).toBe("invalid_cursor");
    expect((await asOwner(rowsUrl({}, "nope"))).status).toBe(404);
    expect((await asOwner("/v1/deploys/chat/tables/messages/rows/zzzzzz")).status).toBe(404);
  });
});

describe("writing", () => {
  it("inserts, edits and deletes rows as a mutation would, and logs each as the developer's action", async () => {
    const general = channels[0] as string;
    const inserted = await asOwner(rowsUrl(), "POST", { channel: general, body: "hello from the dashboard" });
    expect(inserted.status, inserted.text()).toBe(201);
    const row = inserted.json<{ row: Row }>().row;
    expect(row).toMatchObject({ channel: general, body: "hello from the dashboard", likes: 0 });
    expect((await asOwner(`/v1/deploys/chat/tables/messages/rows/${row.id}`)).json()).toEqual({ row });
    expect((await host.call("chat", "query", "count")).json()).toEqual({ value: 121 });

    const edited = await asOwner(`/v1/deploys/chat/tables/messages/rows/${row.id}`, "PATCH", {
      likes: 7,
      pinned: true,
      author: "user:dana",
    });
    expect(edited.status, edited.text()).toBe(200);
    expect(edited.json<{ row: Row }>().row).toMatchObject({ likes: 7, pinned: true, author: "user:dana" });
    const cleared = await asOwner(`/v1/deploys/chat/tables/messages/rows/${row.id}`, "PATCH", {
      likes: null,
      pinned: null,
    });
    const after = cleared.json<{ row: Row }>().row;
    expect(after.likes).toBe(0);
    expect("pinned" in after).toBe(false);
    const byLikes = (
      await asOwner(rowsUrl({ index: "by_likes", range: [{ op: "eq", field: "likes", value: 0 }] }))
    ).json<RowsAnswer>();
    expect(byLikes.count).toEqual({ exact: 13 });

    expect((await asOwner(`/v1/deploys/chat/tables/messages/rows/${row.id}`, "DELETE")).status).toBe(204);
    expect((await asOwner(`/v1/deploys/chat/tables/messages/rows/${row.id}`)).status).toBe(404);
    expect((await asOwner(`/v1/deploys/chat/tables/messages/rows/${row.id}`, "DELETE")).status).toBe(404);
    expect((await host.call("chat", "query", "count")).json()).toEqual({ value: 120 });
    expect((await asOwner(rowsUrl({ numItems: "1" }))).json<RowsAnswer>().count).toEqual({ exact: 120 });

    const lines = host.deployments.logs.recent("chat").filter((line) => line.handler === "dashboard");
    // Marked as the platform's own: a capsule's handler named `dashboard` cannot mark its lines.
    expect(lines.every((line) => line.platform === true)).toBe(true);
    expect(lines.map((line) => line.message)).toEqual([
      `dashboard: developer ${owner.id} inserted messages row ${row.id}`,
      `dashboard: developer ${owner.id} updated messages row ${row.id}`,
      `dashboard: developer ${owner.id} updated messages row ${row.id}`,
      `dashboard: developer ${owner.id} deleted messages row ${row.id}`,
    ]);
    expect(lines[1]?.fields).toEqual({
      by: `developer ${owner.id}`,
      action: "update",
      table: "messages",
      id: row.id,
      fields: ["likes", "pinned", "author"],
    });
  });

  it("refuses what a mutation refuses: wrong types, unknown fields, dangling ids, system fields", async () => {
    const general = channels[0] as string;
    const cases: Array<[unknown, RegExp]> = [
      [{ channel: general, body: "x", likes: "many" }, /Invalid value for messages\.likes/],
      [{ channel: general, body: "x", color: "red" }, /Unknown field messages\.color/],
      [{ channel: "k0000000000000000000000000", body: "x" }, /messages\.channel/],
      [{ channel: general, body: "x", author: "" }, /messages\.author/],
      [{ channel: general }, /Missing value for messages\.body/],
      [{ channel: general, body: "x", id: "mine" }, /set by the database/],
      [{ channel: general, body: "bad \u0000 nul" }, /messages\.body/],
    ];
    for (const [body, message] of cases) {
      const response = await asOwner(rowsUrl(), "POST", body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message, JSON.stringify(body)).toMatch(
        message,
      );
    }
    const any = (await asOwner(rowsUrl({ numItems: "1" }))).json<RowsAnswer>().page[0] as Row;
    const wrong = await asOwner(`/v1/deploys/chat/tables/messages/rows/${any.id}`, "PATCH", {
      pinned: "yes",
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json<{ error: { message: string } }>().error.message).toMatch(/messages\.pinned/);
    expect((await asOwner(rowsUrl({ numItems: "1" }))).json<RowsAnswer>().count).toEqual({ exact: 120 });
  });

  it("lets the operator read a claimed deployment but change rows only of unclaimed ones", async () => {
    expect((await host.admin("/v1/deploys/chat/tables", "GET")).json<TablesAnswer>().writable).toBe(false);
    const refused = await host.admin(rowsUrl(), "POST", { channel: channels[0], body: "operator" });
    expect(refused.status).toBe(403);
    await host.admin("/v1/deploys", "POST", { id: "orphan", code: await fixtureCode("dashboard") });
    const created = await host.admin(rowsUrl({}, "channels", "orphan"), "POST", { name: "ops" });
    expect(created.status, created.text()).toBe(201);
    const log = host.deployments.logs.recent("orphan").find((line) => line.handler === "dashboard");
    expect(log?.message).toMatch(/^dashboard: operator inserted channels row /);
  });

  it("shows a legacy deployment's rows by id, read-only", async () => {
    expect((await host.deployFixture("tasks", "legacy")).status).toBe(201);
    for (let i = 0; i < 7; i++)
      expect((await host.call("tasks", "mutation", "add", [`task ${i}`, "t", i])).status).toBe(200);
    const tables = (await host.admin("/v1/deploys/tasks/tables", "GET")).json<TablesAnswer>();
    expect(tables).toMatchObject({ apiVersion: "legacy", writable: false });
    expect(tables.tables[0]).toMatchObject({ name: "tasks", rows: { exact: 7 }, indexes: [] });
    const first = (
      await host.admin(rowsUrl({ numItems: "4", order: "asc" }, "tasks", "tasks"), "GET")
    ).json<RowsAnswer>();
    expect(first.count).toEqual({ exact: 7 });
    const second = (
      await host.admin(
        rowsUrl({ numItems: "4", order: "asc", cursor: first.continueCursor }, "tasks", "tasks"),
        "GET",
      )
    ).json<RowsAnswer>();
    expect(second.isDone).toBe(true);
    const ids = [...first.page, ...second.page].map((r) => r.id as string);
    expect(ids).toHaveLength(7);
    expect(ids).toEqual([...ids].sort());
    const filtered = await host.admin(
      rowsUrl({ range: [{ op: "eq", field: "tag", value: "t" }] }, "tasks", "tasks"),
      "GET",
    );
    expect(filtered.status).toBe(400);
    const insert = await host.admin(rowsUrl({}, "tasks", "tasks"), "POST", { title: "x" });
    // The operator may change an unclaimed deployment's rows, but legacy rows are the old runtime's.
    expect(insert.status).toBe(400);
    expect(insert.json<{ error: { message: string } }>().error.message).toMatch(
      /legacy database API.*read-only/,
    );
  });
});
it("counts a legacy deployment's tables within one walk allowance per request", async () => {
  // A legacy deployment keeps no stored counts: each table is walked, all of them together at
  // most LIMITS.dashboardCountScan entries per request (here 10), not that many per table.
  const code = await sourceCode(`import { app, string } from "platform/legacy";
export default app({
  schema: { a: { text: string() }, b: { text: string() } },
  queries: {},
  mutations: {
    fill(ctx, n: number) {
      for (let i = 0; i < n; i++) { ctx.db.a.insert({ text: "a" + i }); ctx.db.b.insert({ text: "b" + i }); }
      return n;
    },
  },
});
`);
  expect((await host.admin("/v1/deploys", "POST", { id: "walked", code })).status).toBe(201);
  expect((await host.call("walked", "mutation", "fill", [8])).status).toBe(200);
  const limits = LIMITS as { dashboardCountScan: number };
  const saved = limits.dashboardCountScan;
  limits.dashboardCountScan = 10;
  try {
    const tables = (await host.admin("/v1/deploys/walked/tables", "GET")).json<TablesAnswer>();
    expect(tables.tables.map((table) => [table.name, table.rows])).toEqual([
      ["a", { exact: 8 }],
      ["b", { atLeast: 2 }],
    ]);
  } finally {
    limits.dashboardCountScan = saved;
  }
});

it("ends a legacy page early past the bytes one read may take; its cursor gives the rest", async () => {
  // Legacy rows are read without a handler's budget: 100 rows of 1 MB were one 100 MB answer.
  expect((await host.deployFixture("bulky", "legacy")).status).toBe(201);
  const title = "x".repeat(700_000);
  for (let i = 0; i < 8; i++)
    expect((await host.call("bulky", "mutation", "add", [`${i}${title}`, "t", i])).status).toBe(200);
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 8; pages++) {
    const query: Record<string, string> = { numItems: "100", order: "asc" };
    if (cursor) query.cursor = cursor;
    const answer = await host.admin(rowsUrl(query, "tasks", "bulky"), "GET");
    expect(answer.status, answer.text().slice(0, 200)).toBe(200);
    expect(answer.body.length).toBeLessThan(LIMITS.bytesRead + 1_000_000);
    const page = answer.json<RowsAnswer>();
    seen.push(...page.page.map((row) => row.id as string));
    if (page.isDone) break;
    cursor = page.continueCursor;
  }
  expect(seen).toHaveLength(8);
  expect(new Set(seen).size).toBe(8);
});

describe("a dashboard session on the operator API", () => {
  let session: DashboardSession;
  beforeAll(async () => {
    session = await dashboardSignIn(host, owner.token);
  });

  it("speaks for the signed-in developer with its CSRF header, from the control plane's pages only", async () => {
    const ok = await sessionRequest(host, session, "/v1/deploys/chat/tables");
    expect(ok.status).toBe(200);
    expect(ok.headers["cache-control"]).toBe("no-store");
    const refusals: Array<Record<string, string>> = [
      { "x-platform-csrf": "" },
      { "x-platform-csrf": `${session.csrf}x` },
      { "sec-fetch-site": "same-site", origin: host.deploymentUrl("chat") },
      { "sec-fetch-site": "cross-site", origin: "http://evil.example" },
    ];
    for (const headers of refusals) {
      const response = await sessionRequest(
        host,
        session,
        rowsUrl(),
        "POST",
        { channel: channels[0], body: "csrf" },
        headers,
      );
      expect(response.status, JSON.stringify(headers)).toBe(403);
      expect(response.json<{ error: { code: string } }>().error.code).toBe("forbidden");
    }
    expect((await asOwner(rowsUrl({ numItems: "1" }))).json<RowsAnswer>().count).toEqual({ exact: 120 });
  });

  it("ends with sign-out: the same cookie is refused afterwards", async () => {
    const other = await dashboardSignIn(host, owner.token);
    const { sendRequest } = await import("../cli/http.js");
    const out = await sendRequest(`${host.url}/dashboard/logout`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "sec-fetch-site": "same-origin",
        origin: host.url,
        cookie: other.cookie,
      },
      body: `csrf=${encodeURIComponent(other.csrf)}`,
    });
    expect(out.status).toBe(302);
    expect(out.headers.location).toBe("/dashboard/login");
    const after = await sessionRequest(host, other, "/v1/deploys/chat/tables");
    expect(after.status).toBe(401);
    expect((await sendRequest(`${host.url}/dashboard`, { headers: { cookie: other.cookie } })).status).toBe(
      302,
    );
    expect((await sessionRequest(host, session, "/v1/deploys/chat/tables")).status).toBe(200);
  });
});
