/**
 * A host that vanishes without closing its PostgreSQL connections (power lost, network cut) must
 * not hold its locks for the server's default two hours: every connection a host makes asks the
 * server to probe it when idle (`LIMITS.databaseServerKeepaliveS`), before anything else.
 */
import { type AddressInfo, createServer, type Socket } from "node:net";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { PostgresKv } from "../host/db/index.js";
import { serverKeepaliveSql } from "../host/db/kv/postgres-keepalive.js";
import { SilenceWatch } from "../host/db/kv/postgres-silence.js";
import { watchedPool } from "../host/db/kv/postgres-watched-pool.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { freshTable, postgresForThisFile, postgresInstalled, recordQueries } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL keepalive tests");

describe.skipIf(!postgresInstalled)("the server's end of a host's connections", () => {
  it("probes an idle connection: the settings hold on a pooled connection over TCP", async () => {
    const watch = new SilenceWatch(server.url, LIMITS.databaseSilenceMs);
    const pool = watchedPool(watch, { connectionString: server.url, max: 1 });
    try {
      const shown = async (setting: string) =>
        ((await pool.query(`SHOW ${setting}`)).rows[0] as Record<string, string>)[setting];
      expect(await shown("tcp_keepalives_idle")).toBe(String(LIMITS.databaseServerKeepaliveS));
      expect(await shown("tcp_keepalives_interval")).toBe(
        String(Math.round(LIMITS.databaseServerKeepaliveS / 10)),
      );
      expect(await shown("tcp_keepalives_count")).toBe("6");
    } finally {
      await pool.end();
      watch.close();
    }
  });

  it("is asked for first on every connection a store makes: pools, locks and the listener", async () => {
    const recorded = recordQueries({ setUp: true });
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    try {
      await store.batch([{ type: "put", key: Buffer.from("k"), value: "1" }]);
      const snapshot = await store.readSnapshot();
      expect(await snapshot.get(Buffer.from("k"))).toBe("1");
      await snapshot.close();
      expect(await store.bus.lockAcrossProcesses("held", async () => "ran")).toBe("ran");
    } finally {
      recorded.stop();
      await store.close();
    }
    const first = new Map<pg.Client, string>();
    for (const { client, text } of recorded.queries) if (!first.has(client)) first.set(client, text);
    // The table's set-up, a write, a reader, a lock and the listener: several connections.
    expect(first.size).toBeGreaterThanOrEqual(3);
    for (const text of first.values()) expect(text.startsWith(serverKeepaliveSql())).toBe(true);
  });
});

/**
 * A server that speaks just enough of PostgreSQL's protocol to let a client in (trust: no
 * password), then ends the connection on its first statement, as a restart or an administrator's
 * terminate would while the keepalive is being asked for.
 */
async function endingOnFirstStatement(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    let started = false;
    socket.on("data", () => {
      if (started) {
        socket.destroy();
        return;
      }
      started = true;
      const authenticationOk = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]);
      const readyForQuery = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);
      socket.write(Buffer.concat([authenticationOk, readyForQuery]));
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `postgres://platform@127.0.0.1:${port}/platform`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("a connection lost while it asks for the server's keepalive", () => {
  it("fails its connect, and its error reaches no one unheard (one ended the host)", async () => {
    const server = await endingOnFirstStatement();
    const watch = new SilenceWatch(server.url, LIMITS.databaseSilenceMs);
    const pool = watchedPool(watch, { connectionString: server.url, max: 1 });
    pool.on("error", () => {});
    try {
      await expect(pool.connect()).rejects.toThrow();
      // The pool has no connection left behind that it would hand out dead.
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
      watch.close();
      await server.close();
    }
  });
});
