/**
 * bench/peers' workerd peer: bench/suite's todo rows in a Durable Object's SQLite storage, one
 * table with an index on (list, createdAt), behind the platform's routes and bodies:
 *   POST /api/query/get   {"id": ...}   -> {"value": row | null}
 *   POST /api/query/list  {"list": ...} -> {"value": [the list's 50 newest rows]}
 *   POST /seed            [row, ...]    -> {"value": rows inserted}
 * The front worker sends every request to ONE object (named "bench"), as one platform deployment
 * serves one app; `?object=<name>` picks another (a new, empty object: the cold-start measure).
 */
import { DurableObject } from "cloudflare:workers";

const SCHEMA = `CREATE TABLE IF NOT EXISTS items (
  id TEXT PRIMARY KEY, list TEXT NOT NULL, text TEXT NOT NULL, done INTEGER NOT NULL, createdAt REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS by_list ON items (list, createdAt);`;

/** The platform's row as it answers it: `done` a boolean (SQLite keeps 0/1), its keys in its order. */
function toRow(r) {
  return { id: r.id, createdAt: r.createdAt, list: r.list, text: r.text, done: r.done === 1 };
}

function answer(value) {
  return new Response(JSON.stringify({ value }), { headers: { "content-type": "application/json" } });
}

export class Todos extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
  }

  async fetch(request) {
    const path = new URL(request.url).pathname;
    const body = await request.json();
    if (path === "/api/query/get") {
      const found = this.sql.exec("SELECT * FROM items WHERE id = ?", body.id).toArray()[0];
      return answer(found ? toRow(found) : null);
    }
    if (path === "/api/query/list")
      return answer(
        this.sql
          .exec("SELECT * FROM items WHERE list = ? ORDER BY createdAt DESC LIMIT 50", body.list)
          .toArray()
          .map(toRow),
      );
    if (path === "/seed") {
      this.ctx.storage.transactionSync(() => {
        for (const r of body)
          this.sql.exec(
            "INSERT INTO items (id, list, text, done, createdAt) VALUES (?, ?, ?, ?, ?)",
            r.id,
            r.list,
            r.text,
            r.done ? 1 : 0,
            r.createdAt,
          );
      });
      return answer(body.length);
    }
    return new Response("not found", { status: 404 });
  }
}

export default {
  fetch(request, env) {
    const name = new URL(request.url).searchParams.get("object") ?? "bench";
    return env.TODOS.get(env.TODOS.idFromName(name)).fetch(request);
  },
};
