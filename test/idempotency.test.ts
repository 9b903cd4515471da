/**
 * Idempotency keys on one host (classic-level): a mutation repeated with its key runs once and
 * answers the first outcome, over HTTP (`Idempotency-Key`) and the sync socket (`idempotencyKey`),
 * sequential or concurrent; keys are the caller's own; a key is bound to one call; a failed
 * mutation records nothing; without a key nothing changes.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { afterPrefix } from "../host/db/codec.js";
import { collect, idempotencyPrefix } from "../host/db/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { connectSync, type SyncSocket } from "./helpers/sync-socket.js";

let host: TestHost;
const ID = "ledger";

beforeAll(async () => {
  host = await startTestHost({ requestQuota: false });
  expect((await host.deployFixture(ID, "ledger")).status).toBe(201);
}, 60_000);
afterAll(() => host?.dispose());

function mutate(name: string, args: unknown, key?: string, token?: string): Promise<HttpResponse> {
  return sendRequest(`${host.deploymentUrl(ID)}/api/mutation/${name}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key === undefined ? {} : { "idempotency-key": key }),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(args),
  });
}

async function query(name: string, args: unknown = {}): Promise<unknown> {
  const response = await host.call(ID, "query", name, args);
  expect(response.status, response.text()).toBe(200);
  return response.json<{ value: unknown }>().value;
}

async function guestToken(): Promise<string> {
  const response = await sendRequest(`${host.deploymentUrl(ID)}/__platform/auth/guest`, { method: "POST" });
  return response.json<{ token: string }>().token;
}

describe("idempotency keys over HTTP", () => {
  it("runs a mutation repeated with its key once and answers the first outcome", async () => {
    const runs = (await query("runs")) as number;
    const key = randomUUID();
    const first = await mutate("add", { tag: "once" }, key);
    const second = await mutate("add", { tag: "once" }, key);
    expect(first.status, first.text()).toBe(200);
    expect(second.status).toBe(200);
    expect(second.text()).toBe(first.text());
    expect(await query("tagCount", { tag: "once" })).toBe(1);
    expect(await query("runs")).toBe(runs + 1);
  });

  it("changes nothing without a key: each call runs", async () => {
    await mutate("add", { tag: "keyless" });
    await mutate("add", { tag: "keyless" });
    expect(await query("tagCount", { tag: "keyless" })).toBe(2);
  });

  it("runs concurrent repeats of one key once, all answering the same outcome", async () => {
    const runs = (await query("runs")) as number;
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 24 }, () => mutate("add", { tag: "burst" }, key)));
    for (const answer of answers) expect(answer.status, answer.text()).toBe(200);
    expect(new Set(answers.map((a) => a.text())).size).toBe(1);
    expect(await query("tagCount", { tag: "burst" })).toBe(1);
    expect(await query("runs")).toBe(runs + 1);
  });

  it("keeps keys per caller: another caller reusing a key runs its own call and reads nothing", async () => {
    const [alice, mallory] = await Promise.all([guestToken(), guestToken()]);
    const key = randomUUID();
    const hers = await mutate("add", { tag: "private" }, key, alice);
    const his = await mutate("add", { tag: "private" }, key, mallory);
    const anonymous = await mutate("add", { tag: "private" }, key);
    expect(hers.status).toBe(200);
    expect(his.status).toBe(200);
    expect(anonymous.status).toBe(200);
    const ids = [hers, his, anonymous].map((r) => r.json<{ value: { id: string } }>().value.id);
    expect(new Set(ids).size).toBe(3);
    expect(await query("tagCount", { tag: "private" })).toBe(3);
    // Her own retry still gets her outcome.
    expect((await mutate("add", { tag: "private" }, key, alice)).text()).toBe(hers.text());
  });

  it("binds a key to one call: other arguments or another mutation are a 409 conflict", async () => {
    const key = randomUUID();
    expect((await mutate("add", { tag: "bound" }, key)).status).toBe(200);
    const otherArgs = await mutate("add", { tag: "bound-2" }, key);
    expect(otherArgs.status).toBe(409);
    expect(otherArgs.json<{ error: { code: string; message: string } }>().error).toMatchObject({
      code: "conflict",
      message: expect.stringMatching(/already used for another mutation or other arguments/),
    });
    expect((await mutate("echo", { word: "x" }, key)).status).toBe(409);
    expect(await query("tagCount", { tag: "bound-2" })).toBe(0);
  });

  it("refuses malformed keys with a message saying what a key is", async () => {
    for (const bad of ["has space", "é-accent", "x".repeat(LIMITS.idempotencyKeyChars + 1)]) {
      const response = await mutate("add", { tag: "malformed" }, bad);
      expect(response.status, bad).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message).toMatch(
        /printable ASCII characters without spaces/,
      );
    }
    expect(await query("tagCount", { tag: "malformed" })).toBe(0);
    // The longest key accepted works.
    expect((await mutate("add", { tag: "long-key" }, "k".repeat(LIMITS.idempotencyKeyChars))).status).toBe(
      200,
    );
  });

  it("records the outcome of a mutation that writes nothing", async () => {
    const key = randomUUID();
    const first = await mutate("echo", { word: "hello" }, key);
    const again = await mutate("echo", { word: "hello" }, key);
    expect(first.status).toBe(200);
    // The handler returns Math.random(): the same number proves it did not run again.
    expect(again.text()).toBe(first.text());
    expect((await mutate("echo", { word: "hello" })).text()).not.toBe(first.text());
  });

  it("records nothing for a mutation that failed: a retry runs it again and still writes nothing", async () => {
    const key = randomUUID();
    const before = host.logs.length;
    const first = await mutate("fail", { tag: "failed" }, key);
    const again = await mutate("fail", { tag: "failed" }, key);
    expect(first.status).toBe(500);
    expect(again.status).toBe(500);
    expect(again.json<{ error: { code: string } }>().error.code).toBe("handler_error");
    const failedCalls = host.logs
      .slice(before)
      .filter((line) => (line as { call?: { name?: string; outcome?: string } }).call?.name === "fail");
    expect(failedCalls).toHaveLength(2);
    expect(await query("tagCount", { tag: "failed" })).toBe(0);
  });
});

describe("idempotency keys over the sync socket", () => {
  let socket: SyncSocket;
  let other: SyncSocket;
  beforeAll(async () => {
    socket = await connectSync(host.deploymentUrl(ID));
    other = await connectSync(host.deploymentUrl(ID));
  });
  afterAll(() => {
    socket?.ws.close();
    other?.ws.close();
  });

  const send = (on: SyncSocket, id: string, args: unknown, idempotencyKey?: unknown) => {
    on.ws.send(JSON.stringify({ type: "mutation", id, name: "add", args, idempotencyKey }));
    return on.next((m) => m.type === "mutationResult" && m.id === id);
  };

  it("runs a mutation resent with its key (on another socket, or at once on the same) once", async () => {
    const key = randomUUID();
    const [a, b] = await Promise.all([
      send(socket, "a1", { tag: "sock" }, key),
      send(socket, "a2", { tag: "sock" }, key),
    ]);
    const c = await send(other, "c1", { tag: "sock" }, key);
    expect(a.value).toBeDefined();
    expect(b.value).toEqual(a.value);
    expect(c.value).toEqual(a.value);
    expect(await query("tagCount", { tag: "sock" })).toBe(1);
    // The same key over HTTP (same caller: anonymous) is the same call.
    expect((await mutate("add", { tag: "sock" }, key)).json<{ value: unknown }>().value).toEqual(a.value);
  });

  it("answers a malformed key with bad_request and runs nothing", async () => {
    const answer = await send(socket, "bad", { tag: "sock-bad" }, 42);
    expect(answer.error).toMatchObject({ code: "bad_request" });
    expect(await query("tagCount", { tag: "sock-bad" })).toBe(0);
  });
});

describe("idempotency keys of anonymous callers", () => {
  it("keeps an anonymous caller's keys its address's: another address reusing one runs its own call", async () => {
    // Behind a trusted proxy, as most hosts run: the client address is the proxy's last entry.
    const proxied = await startTestHost({ requestQuota: false, trustProxy: true });
    try {
      expect((await proxied.deployFixture(ID, "ledger")).status).toBe(201);
      const from = (address: string, key: string) =>
        sendRequest(`${proxied.deploymentUrl(ID)}/api/mutation/add`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key, "x-forwarded-for": address },
          body: JSON.stringify({ tag: "anonymous" }),
        });
      const key = "order-1042";
      const first = await from("203.0.113.7", key);
      const elsewhere = await from("198.51.100.9", key);
      expect(first.status, first.text()).toBe(200);
      expect(elsewhere.status, elsewhere.text()).toBe(200);
      expect(elsewhere.text()).not.toBe(first.text());
      // The first address's retry gets its own outcome.
      expect((await from("203.0.113.7", key)).text()).toBe(first.text());
    } finally {
      await proxied.dispose();
    }
  });
});

describe("what a key's record holds", () => {
  it("keeps an answer as it is, counted against the mutation's bytes written", async () => {
    // Encoded again as JSON, an answer of quotes took twice its size in a record the write budget
    // did not count, held in memory until the commit (a review).
    const app = `
import { capsule, number, table } from "platform/server";
export default capsule({
  schema: { marks: table({ n: number() }) },
  mutations: {
    quotes: async (ctx, args: { n: number }) => {
      await ctx.db.marks.insert({ n: args.n });
      return '"'.repeat(args.n);
    },
  },
});
`;
    expect((await host.deployCode("quoted", await sourceCode(app))).status).toBe(201);
    const send = (n: number, key: string) =>
      sendRequest(`${host.deploymentUrl("quoted")}/api/mutation/quotes`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ n }),
      });
    const key = randomUUID();
    const n = 3 * 1024 * 1024;
    const first = await send(n, key);
    expect(first.status).toBe(200);
    expect((await send(n, key)).text()).toBe(first.text());
    const prefix = idempotencyPrefix("quoted");
    const records = await collect(host.database.store.iterate({ gte: prefix, lt: afterPrefix(prefix) }));
    expect(records).toHaveLength(1);
    const valueJson = JSON.stringify('"'.repeat(n));
    expect(records[0]?.[1].length).toBeLessThan(valueJson.length + 100);
  }, 60_000);
});
