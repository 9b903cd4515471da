/**
 * The servers bench/isolates measures the platform against, on the same rows: (b) the platform's
 * own Koa route calling host/db without an isolate, (c) plain Koa over raw classic-level and (d)
 * plain Node `http` over raw classic-level, the embedded path's floor.
 */
import { createServer } from "node:http";
import { join } from "node:path";
import Router from "@koa/router";
import { ClassicLevel } from "classic-level";
import Koa from "koa";
import type { TenantDatabase } from "../../dist/host/db/tenant-database.js";
import { readJsonText } from "../../dist/host/http/body.js";
import { errorEnvelope } from "../../dist/host/http/errors.js";
import { listen } from "../../dist/host/http/index.js";

/** Where the plain servers (c) and (d) answer every row at once, as the platform's `list` query does. */
export const LIST_PATH = "/list";

/** A comparison server listening on loopback. */
export interface PeerServer {
  port: number;
  close(): Promise<void>;
}

/** (b): the platform's route shape (Koa, router, error envelope, body limit) calling host/db directly. */
export async function directPeer(database: TenantDatabase): Promise<PeerServer> {
  const direct = new Koa();
  direct.use(errorEnvelope(() => {}));
  const router = new Router();
  router.post("/api/query/get", async (ctx) => {
    const args = JSON.parse(await readJsonText(ctx, 1024 * 1024, "{}")) as { id: string };
    const result = await database.query((tx) => tx.get("items", args.id), { handler: "get" });
    ctx.type = "application/json";
    ctx.body = `{"value":${result.value ?? "null"}}`;
  });
  direct.use(router.routes());
  const server = await listen(direct, 0);
  return { port: server.port, close: () => server.close() };
}

/** (c) and (d) over one raw classic-level database holding a row like the platform's for each of `ids`. */
export async function plainPeers(
  dir: string,
  ids: string[],
): Promise<{ koaPort: number; barePort: number; close(): Promise<void> }> {
  const db = new ClassicLevel<string, string>(join(dir, "plain"), { valueEncoding: "utf8" });
  await db.open();
  for (const id of ids)
    await db.put(id, JSON.stringify({ id, createdAt: Date.now(), title: "item lorem ipsum", n: 1 }));
  // Every row as one JSON answer, read as the platform reads them (values as text, in one scan).
  const list = async () => `{"value":[${(await db.values({ limit: ids.length }).all()).join(",")}]}`;

  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.path === LIST_PATH) {
      ctx.type = "application/json";
      ctx.body = await list();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const { id } = JSON.parse(Buffer.concat(chunks).toString()) as { id: string };
    ctx.type = "application/json";
    ctx.body = `{"value":${(await db.get(id)) ?? "null"}}`;
  });
  const koa = await listen(app, 0);

  const bare = createServer((req, res) => {
    if (req.url === LIST_PATH) {
      req.resume();
      void list().then((body) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(body);
      });
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString()) as { id: string };
      db.get(id).then((row) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(`{"value":${row ?? "null"}}`);
      });
    });
  });
  await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
  const barePort = (bare.address() as { port: number }).port;
  return {
    koaPort: koa.port,
    barePort,
    close: async () => {
      await koa.close();
      await new Promise((resolve) => bare.close(resolve));
      await db.close();
    },
  };
}
