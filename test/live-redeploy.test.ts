/**
 * Live queries and deploys: a redeploy re-runs every subscription of the deployment (its code may
 * answer differently now, and nothing else would tell its subscribers), and a subscription refused
 * for good (no such query) costs nothing per commit: an anonymous client subscribing to a thousand
 * unknown names must not make every commit of the app run a thousand calls.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { SYNC_CLOSE } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { connectSync } from "./helpers/sync-socket.js";

const version = (label: string, extraQuery = "") => `import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { notes: table({ text: string() }) },
  queries: {
    label: async () => ${JSON.stringify(label)},
    count: async (ctx) => ctx.db.notes.count(),
    ${extraQuery}
  },
  mutations: { add: async (ctx, args) => ctx.db.notes.insert({ text: args.text }) },
});
`;

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
});
afterAll(async () => {
  await host.dispose();
});

interface Seen {
  values: unknown[];
  errors: Array<{ code: string; message: string }>;
}

async function subscribe(deployment: string, name: string, args: unknown = {}, on = host): Promise<Seen> {
  const seen: Seen = { values: [], errors: [] };
  await on.live.subscribe(deployment, name, JSON.stringify(args), null, {
    value: (json) => seen.values.push(JSON.parse(json)),
    error: (error) => seen.errors.push(error as { code: string; message: string }),
  });
  return seen;
}

const add = (deployment: string, text: string) =>
  host.deployments.call(deployment, {
    kind: "mutation",
    name: "add",
    argsJson: JSON.stringify({ text }),
    identity: null,
  });

describe("live queries across a redeploy", () => {
  it("push what the new code answers, with no commit in between", async () => {
    expect((await host.deployCode("relabel", await sourceCode(version("one")))).status).toBe(201);
    const label = await subscribe("relabel", "label");
    expect(label.values).toEqual(["one"]);
    expect((await host.deployCode("relabel", await sourceCode(version("two")))).status).toBe(200);
    await host.live.settled();
    expect(label.values).toEqual(["one", "two"]);
  }, 60_000);

  it("run a subscription to an unknown query once, not on every commit, and answer it once deployed", async () => {
    expect((await host.deployCode("unknown", await sourceCode(version("v1")))).status).toBe(201);
    const subscriptions = 50;
    const unknown: Seen[] = [];
    for (let i = 0; i < subscriptions; i++) unknown.push(await subscribe("unknown", "later", { i }));
    for (const seen of unknown) {
      expect(seen.errors.map((error) => error.code)).toEqual(["not_found"]);
      expect(seen.values).toEqual([]);
    }
    const before = host.live.executions;
    for (let commit = 0; commit < 5; commit++) await add("unknown", `note ${commit}`);
    await host.live.settled();
    expect(host.live.executions - before).toBe(0);

    const later = 'later: async (ctx, args) => "later " + args.i,';
    expect((await host.deployCode("unknown", await sourceCode(version("v2", later)))).status).toBe(200);
    await host.live.settled();
    expect(host.live.executions - before).toBe(subscriptions);
    expect(unknown.map((seen) => seen.values)).toEqual(unknown.map((_, i) => [`later ${i}`]));
  }, 60_000);

  it("still re-run a subscription when a commit writes what it read", async () => {
    expect((await host.deployCode("counted", await sourceCode(version("c")))).status).toBe(201);
    const count = await subscribe("counted", "count");
    await add("counted", "one");
    await host.live.settled();
    expect(count.values).toEqual([0, 1]);
  }, 60_000);

  it("hear the commits of a deployment deleted and created again under its id", async () => {
    expect((await host.deployCode("reborn", await sourceCode(version("first")))).status).toBe(201);
    const before = await subscribe("reborn", "count");
    await add("reborn", "old");
    await host.live.settled();
    expect(before.values).toEqual([0, 1]);

    expect((await host.admin("/v1/deploys/reborn", "DELETE")).status).toBe(204);
    expect((await host.deployCode("reborn", await sourceCode(version("second")))).status).toBe(201);
    const after = await subscribe("reborn", "count");
    await add("reborn", "new");
    await host.live.settled();
    expect(after.values).toEqual([0, 1]);
  }, 60_000);
});

describe.skipIf(postgresBinDir() === undefined)("on PostgreSQL, shared by two hosts", () => {
  it("a subscription on one host gets what a deploy through the other answers", async () => {
    const server = await startLocalPostgres();
    const a = await startTestHost({ database: server.url });
    const b = await startTestHost({ database: server.url });
    try {
      expect((await a.deployCode("shared", await sourceCode(version("one")))).status).toBe(201);
      const label = await subscribe("shared", "label", {}, b);
      expect(label.values).toEqual(["one"]);
      expect((await a.deployCode("shared", await sourceCode(version("two")))).status).toBe(200);
      // The deploy reaches host b as an announcement: waited for, however long it takes.
      await vi.waitFor(() => expect(label.values).toEqual(["one", "two"]), { timeout: 30_000, interval: 50 });
    } finally {
      await a.dispose();
      await b.dispose();
      await server.stop();
    }
  }, 90_000);

  /**
   * Deletes deployment "again" and creates another under its id through host a while host b hears
   * nothing (its listening connection is down); then b hears `heard` (what its bus delivers once it
   * listens again, or the re-creation's own announcement). With `settingsFirst`, b first heard a
   * settings change, which empties its cache of the record.
   */
  async function recreatedUnheard(heard: "resync" | "deployment", settingsFirst: boolean) {
    const server = await startLocalPostgres();
    const a = await startTestHost({ database: server.url });
    const b = await startTestHost({ database: server.url });
    try {
      expect((await a.deployCode("again", await sourceCode(version("first owner")))).status).toBe(201);
      const socket = await connectSync(b.deploymentUrl("again"));
      socket.subscribe("s", "label", {});
      expect(await socket.next((m) => m.id === "s" && m.type === "value")).toMatchObject({
        value: "first owner",
      });
      const closed = new Promise<number>((resolve) => socket.ws.once("close", (code) => resolve(code)));
      const database = b.database as unknown as { receive: (message: unknown) => Promise<void> };
      const receive = database.receive.bind(b.database);
      if (settingsFirst) await receive({ type: "deployment", id: "again" });
      database.receive = async () => {};
      expect((await a.admin("/v1/deploys/again", "DELETE")).status).toBe(204);
      expect((await a.deployCode("again", await sourceCode(version("second owner")))).status).toBe(201);
      database.receive = receive;
      await receive(heard === "resync" ? { type: "resync" } : { type: "deployment", id: "again" });
      // The first deployment's socket is closed as a deleted one's, not fed the second's answers.
      expect(await closed).toBe(SYNC_CLOSE.deploymentGone);
      expect(socket.of("s").map((m) => m.value)).not.toContain("second owner");
      const answered = await b.deployments.call("again", {
        kind: "query",
        name: "label",
        argsJson: "{}",
        identity: null,
      });
      expect(JSON.parse(answered.valueJson)).toBe("second owner");
    } finally {
      await a.dispose();
      await b.dispose();
      await server.stop();
    }
  }

  it("a deployment deleted and created again while one host heard nothing is gone there once it resyncs", async () => {
    await recreatedUnheard("resync", false);
  }, 90_000);

  it("the same, heard as the re-creation's announcement after a settings change emptied the cache", async () => {
    await recreatedUnheard("deployment", true);
  }, 90_000);
});
