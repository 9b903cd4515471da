/**
 * The two servers bench/suite compares the platform with, doing the same work without isolation:
 * plain Koa over classic-level (hand-laid keys, a covering index per list) and plain Koa over
 * better-sqlite3 (a table with an index on (list, createdAt)), the stacks a self-hosting user would
 * otherwise pick. Same routes and bodies as the platform's `/api/query/<name>`.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import Router from "@koa/router";
import Database from "better-sqlite3";
import { ClassicLevel } from "classic-level";
import Koa from "koa";
import { readJsonText } from "../../dist/host/http/body.js";
import { listen, type RunningServer } from "../../dist/host/http/index.js";

/** The rows both peers start with: the platform's seeded ids, so every server answers alike. */
export interface SeedRow {
  id: string;
  list: string;
  text: string;
  done: boolean;
  createdAt: number;
}

type Handler = (args: Record<string, unknown>) => Promise<unknown> | unknown;

function serve(handlers: Record<string, Handler>): Promise<RunningServer> {
  const app = new Koa();
  const router = new Router();
  router.post("/api/:kind/:name", async (ctx) => {
    const handler = handlers[ctx.params.name as string];
    if (!handler) {
      ctx.status = 404;
      return;
    }
    const args = JSON.parse(await readJsonText(ctx, 1024 * 1024, "{}")) as Record<string, unknown>;
    ctx.type = "application/json";
    ctx.body = `{"value":${JSON.stringify((await handler(args)) ?? null)}}`;
  });
  app.use(router.routes());
  return listen(app, 0);
}

const newId = () => randomBytes(16).toString("base64url");

/** Koa + classic-level: `i!<id>` -> row, `l!<list>!<createdAt>!<id>` -> row (covering index). */
export async function classicLevelPeer(
  dir: string,
  rows: SeedRow[],
): Promise<RunningServer & { close(): Promise<void> }> {
  const db = new ClassicLevel<string, string>(join(dir, "peer-level"), { valueEncoding: "utf8" });
  await db.open();
  const time = (t: number) => t.toFixed(3).padStart(20, "0");
  const put = (row: SeedRow) => {
    const json = JSON.stringify(row);
    return [
      { type: "put" as const, key: `i!${row.id}`, value: json },
      { type: "put" as const, key: `l!${row.list}!${time(row.createdAt)}!${row.id}`, value: json },
    ];
  };
  for (let i = 0; i < rows.length; i += 1000) await db.batch(rows.slice(i, i + 1000).flatMap(put));
  const server = await serve({
    get: async ({ id }) => {
      const json = await db.get(`i!${id as string}`);
      return json === undefined ? null : JSON.parse(json);
    },
    list: async ({ list }) => {
      const out: unknown[] = [];
      for await (const value of db.values({ gt: `l!${list}!`, lt: `l!${list}!~`, reverse: true, limit: 50 }))
        out.push(JSON.parse(value));
      return out;
    },
    page: async ({ list, paginationOpts }) => {
      const { cursor, numItems } = paginationOpts as { cursor: string | null; numItems: number };
      const page: unknown[] = [];
      let last = "";
      for await (const [key, value] of db.iterator({
        gt: cursor ?? `l!${list}!`,
        lt: `l!${list}!~`,
        limit: numItems,
      })) {
        page.push(JSON.parse(value));
        last = key;
      }
      return { page, isDone: page.length < numItems, continueCursor: last };
    },
    count: async ({ list }) => {
      let n = 0;
      for await (const _ of db.keys({ gt: `l!${list}!`, lt: `l!${list}!~` })) n++;
      return n;
    },
    insert: async ({ list, text }) => {
      const row = {
        id: newId(),
        list: list as string,
        text: text as string,
        done: false,
        createdAt: Date.now(),
      };
      await db.batch(put(row));
      return row.id;
    },
  });
  return {
    ...server,
    close: async () => {
      await server.close();
      await db.close();
    },
  };
}

/** Koa + better-sqlite3: one table, an index on (list, createdAt), prepared statements. */
export async function sqlitePeer(
  dir: string,
  rows: SeedRow[],
): Promise<RunningServer & { close(): Promise<void> }> {
  const db = new Database(join(dir, "peer.sqlite"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(
    "CREATE TABLE items (id TEXT PRIMARY KEY, list TEXT NOT NULL, text TEXT NOT NULL, done INTEGER NOT NULL, createdAt REAL NOT NULL); CREATE INDEX by_list ON items (list, createdAt);",
  );
  const insert = db.prepare("INSERT INTO items (id, list, text, done, createdAt) VALUES (?, ?, ?, ?, ?)");
  db.transaction((all: SeedRow[]) => {
    for (const r of all) insert.run(r.id, r.list, r.text, r.done ? 1 : 0, r.createdAt);
  })(rows);
  const get = db.prepare("SELECT * FROM items WHERE id = ?");
  const list = db.prepare("SELECT * FROM items WHERE list = ? ORDER BY createdAt DESC LIMIT 50");
  const first = db.prepare("SELECT * FROM items WHERE list = ? ORDER BY createdAt LIMIT ?");
  const after = db.prepare("SELECT * FROM items WHERE list = ? AND createdAt > ? ORDER BY createdAt LIMIT ?");
  const count = db.prepare("SELECT count(*) AS n FROM items WHERE list = ?");
  const row = (r: Record<string, unknown> | undefined): Record<string, unknown> | null =>
    r ? { ...r, done: r.done === 1 } : null;
  const server = await serve({
    get: ({ id }) => row(get.get(id) as Record<string, unknown> | undefined),
    list: ({ list: l }) => (list.all(l) as Array<Record<string, unknown>>).map(row),
    page: ({ list: l, paginationOpts }) => {
      const { cursor, numItems } = paginationOpts as { cursor: string | null; numItems: number };
      const page = (
        (cursor === null ? first.all(l, numItems) : after.all(l, Number(cursor), numItems)) as Array<
          Record<string, unknown>
        >
      ).map(row);
      const last = page.at(-1);
      return { page, isDone: page.length < numItems, continueCursor: String(last?.createdAt ?? "") };
    },
    count: ({ list: l }) => (count.get(l) as { n: number }).n,
    insert: ({ list: l, text }) => {
      const id = newId();
      insert.run(id, l, text, 0, Date.now());
      return id;
    },
  });
  return {
    ...server,
    close: async () => {
      await server.close();
      db.close();
    },
  };
}
