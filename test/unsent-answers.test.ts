/**
 * Answers a client does not read: counted per client address until they are, refused beyond the
 * address's share, and their connection closed once one waited too long. 60 connections that
 * never read an 8 MB answer held 1.5 GB of the host before.
 */
import { createServer } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { Readable } from "node:stream";
import Koa from "koa";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { sendRequest } from "../cli/http.js";
import { UnsentAnswers } from "../host/http/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { developerWithBigDeployment, startUnreadExport } from "./helpers/export-import.js";
import { deployOwnedWithSession, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, endpoint, string, table, text } from "platform/server";
export default capsule({
  schema: { hits: table({ at: string() }) },
  queries: { hits: async (ctx) => (await ctx.db.hits.collect()).length },
  endpoints: {
    big: endpoint({ method: "GET", path: "/big", readOnly: true }, async () => text("x".repeat(6_000_000))),
    small: endpoint({ method: "GET", path: "/small", readOnly: true }, async () => text("ok")),
    bigWrite: endpoint({ method: "GET", path: "/big-write", readOnly: false }, async (ctx) => {
      await ctx.db.hits.insert({ at: "now" });
      return text("y".repeat(6_000_000), { headers: { "set-cookie": "seen=1" } });
    }),
  },
});
`;

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost({ unsentAnswerLimits: { perClient: 4 * 1024 * 1024, waitMs: 3000 } });
  expect((await host.deployCode("app", await sourceCode(CAPSULE))).status).toBe(201);
});
afterAll(() => host.dispose());

/** Asks for `path` and stops reading after the first bytes; resolves with the socket and those bytes. */
function unreadAnswer(path = "/big"): Promise<{ socket: Socket; first: Buffer }> {
  const { port } = new URL(host.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${new URL(host.deploymentUrl("app")).host}\r\n\r\n`),
    );
    socket.once("data", (chunk: Buffer) => {
      socket.pause();
      expect(chunk.toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
      resolve({ socket, first: chunk });
    });
    socket.on("error", reject);
  });
}

/**
 * Sends `GET path` on `count` connections at once, reading only the first bytes of each answer;
 * resolves with those bytes (as text) and the sockets, left paused (the caller destroys them).
 */
async function togetherUnread(path: string, count: number): Promise<{ heads: string[]; sockets: Socket[] }> {
  const { port } = new URL(host.url);
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(Number(port), "127.0.0.1", () => resolve(socket));
          socket.on("error", reject);
        }),
    ),
  );
  const heads = await Promise.all(
    sockets.map(
      (socket) =>
        new Promise<string>((resolve) => {
          socket.once("data", (chunk: Buffer) => {
            socket.pause();
            resolve(chunk.toString("latin1"));
          });
          socket.write(`GET ${path} HTTP/1.1\r\nHost: ${new URL(host.deploymentUrl("app")).host}\r\n\r\n`);
        }),
    ),
  );
  return { heads, sockets };
}

/** Closes `sockets` and waits until their address may be answered again. */
async function letGo(sockets: Socket[]): Promise<void> {
  for (const socket of sockets) socket.destroy();
  await vi.waitFor(
    async () => expect((await sendRequest(`${host.deploymentUrl("app")}/small`)).status).toBe(200),
    { timeout: 30_000, interval: 250 },
  );
}

it("refuses an address whose answers wait unread past its share, and closes a connection whose answer waited too long", async () => {
  const small = () => sendRequest(`${host.deploymentUrl("app")}/small`);
  expect((await small()).status).toBe(200);

  const { socket: unread, first } = await unreadAnswer();
  const refused = await small();
  expect([refused.status, refused.json(), Number(refused.headers["retry-after"])]).toEqual([
    429,
    {
      error: {
        code: "limit_exceeded",
        message: `Answers to your address not yet read passed ${4 * 1024 * 1024} bytes; retry in a moment (a client that stops reading its answers holds them).`,
      },
    },
    1,
  ]);

  // The host closes the connection that does not read (after 3 s here), and the room comes back.
  await vi.waitFor(async () => expect((await small()).status).toBe(200), { timeout: 30_000, interval: 250 });
  let received = first.length;
  unread.on("data", (chunk: Buffer) => {
    received += chunk.length;
  });
  unread.on("error", () => {});
  await new Promise<void>((resolve) => unread.once("close", () => resolve()).resume());
  // Cut short: the headers and all 6,000,000 characters would be more.
  expect(received).toBeLessThan(6_000_000);
  expect(received).toBeGreaterThan(0);
}, 60_000);

it("refuses the answers of reads that arrived together once the first would pass the address's share", async () => {
  // Each passed the check on arrival (nothing was held yet); their answers are refused as they are
  // made, instead of holding several times the share for one address.
  const { heads, sockets } = await togetherUnread("/big", 4);
  const statuses = heads.map((head) => head.slice(0, 12));
  expect(statuses.filter((status) => status === "HTTP/1.1 200")).toHaveLength(1);
  expect(statuses.filter((status) => status === "HTTP/1.1 429")).toHaveLength(3);
  await letGo(sockets);
}, 60_000);

it("sends the answers of writes that arrived together, whatever their address holds: the writes happened", async () => {
  // A GET endpoint declared to write runs as a mutation: its answer is never swapped for a 429.
  const before = (await host.call("app", "query", "hits")).json<{ value: number }>().value;
  const { heads, sockets } = await togetherUnread("/big-write", 3);
  await letGo(sockets);
  const written = (await host.call("app", "query", "hits")).json<{ value: number }>().value - before;
  // Those that ran were answered as they ran; any refused on arrival (the address full) did not run.
  expect(written).toBeGreaterThanOrEqual(1);
  expect(heads.filter((head) => head.startsWith("HTTP/1.1 200"))).toHaveLength(written);
  for (const head of heads.filter((each) => each.startsWith("HTTP/1.1 429")))
    expect(head).not.toContain("seen=1");
}, 60_000);

it("counts a streamed download by its length, and closes it when it is not read", async () => {
  // Downloads are streamed from the blob store; counted as nothing, 600 unread ones from one
  // address held their files open (or, on S3, every socket of the bucket's client) for ever.
  const token = await deployOwnedWithSession(host, "files", "access", "f@example.com");
  const stored = await sendRequest(`${host.deploymentUrl("files")}/storage?public=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
    body: Buffer.alloc(4_500_000, 7),
  });
  expect(stored.status).toBe(201);
  const path = `/storage/${stored.json<{ key: string }>().key}`;
  const { port } = new URL(host.url);
  const socket = await new Promise<Socket>((resolve, reject) => {
    const opened = connect(Number(port), "127.0.0.1", () =>
      opened.write(`GET ${path} HTTP/1.1\r\nHost: ${new URL(host.deploymentUrl("files")).host}\r\n\r\n`),
    );
    opened.once("data", () => {
      opened.pause();
      resolve(opened);
    });
    opened.on("error", reject);
  });
  const small = () => sendRequest(`${host.deploymentUrl("files")}/storage/public/${"a".repeat(22)}`);
  expect((await small()).status).toBe(429);
  socket.on("error", () => {});
  await new Promise<void>((resolve) => socket.once("close", () => resolve()).resume());
  await vi.waitFor(async () => expect((await small()).status).toBe(404), { timeout: 30_000, interval: 250 });
}, 60_000);

it("counts nothing for an answer whose client left before it was made", async () => {
  const answers = UnsentAnswers.forHost(
    { enabled: true, clientAddress: (req) => req.socket.remoteAddress ?? "" },
    { perClient: 1024 },
  );
  let made: () => void = () => {};
  const answered = new Promise<void>((resolve) => {
    made = resolve;
  });
  const app = new Koa();
  app.use(answers.middleware());
  app.use(async (ctx) => {
    // Answers only once its client has gone.
    if (!ctx.req.socket.destroyed) await new Promise((resolve) => ctx.req.socket.once("close", resolve));
    ctx.body = "x".repeat(1_000_000);
    made();
  });
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const client = connect((server.address() as AddressInfo).port, "127.0.0.1", () => {
      client.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n", () => client.destroy());
    });
    await answered;
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers.unsent).toBe(0);
  } finally {
    server.close();
  }
});

/**
 * A plain Koa server counting its answers with {@link UnsentAnswers} of `limits`, each client
 * named by its `X-Client` header; `/small` answers "ok", everything else `answer`. `ask` sends a
 * GET as a client and keeps what comes back.
 */
async function answersServer(limits: { perClient: number; total: number }, answer: Koa.Middleware) {
  const answers = UnsentAnswers.forHost(
    { enabled: true, clientAddress: (req) => String(req.headers["x-client"]) },
    { ...limits, waitMs: 60_000 },
  );
  const app = new Koa();
  // Dropped answers end as "premature close": expected here, not worth a line on stderr.
  app.silent = true;
  app.use(answers.middleware());
  app.use(async (ctx, next) => {
    if (ctx.path === "/small") ctx.body = "ok";
    else await answer(ctx, next);
  });
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const ask = (client: string, path: string) => {
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Client: ${client}\r\n\r\n`),
    );
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
    });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    return { socket, closed, text: () => text };
  };
  return { answers, port, ask, close: () => server.close() };
}

it("makes room for an address within an even share once the host is full, dropping the oldest unread reads of the heaviest", async () => {
  const MiB = 1024 * 1024;
  // Downloads their clients never get the rest of: counted by their length until closed.
  const { answers, ask, close } = await answersServer({ perClient: 4 * MiB, total: 8 * MiB }, async (ctx) => {
    ctx.length = MiB;
    ctx.type = "application/octet-stream";
    ctx.body = new Readable({ read() {} });
  });
  try {
    // Four addresses hold two downloads each: the host's 8 MiB.
    const held = ["a", "a", "b", "b", "c", "c", "d", "d"].map((client) => ask(client, "/big"));
    await vi.waitFor(() => expect(answers.unsent).toBe(8 * MiB));
    // One of them, past an even share (2 MiB of 8 among four), is refused more.
    const more = ask("b", "/big");
    await vi.waitFor(() => expect(more.text()).toMatch(/^HTTP\/1\.1 503 /));
    expect(answers.unsent).toBe(8 * MiB);
    // A newcomer is answered once they stood still a while: the oldest download of the first of
    // the heaviest is dropped for it.
    await new Promise((resolve) => setTimeout(resolve, LIMITS.heldStalledMs + 100));
    const newcomer = ask("e", "/small");
    await vi.waitFor(() => expect(newcomer.text()).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\nok$/));
    await held[0]?.closed;
    expect(held.slice(1).every(({ socket }) => !socket.destroyed)).toBe(true);
    expect(answers.unsent).toBe(7 * MiB);
    for (const { socket } of [...held, more, newcomer]) socket.destroy();
    await vi.waitFor(() => expect(answers.unsent).toBe(0));
  } finally {
    close();
  }
});

it("takes a download its client reads a trickle of for one standing still, once the host is full", async () => {
  const MiB = 1024 * 1024;
  const { answers, ask, close } = await answersServer({ perClient: 4 * MiB, total: 2 * MiB }, async (ctx) => {
    // A download of 1 MiB that comes 2 bytes every 50 ms, 600 at most (under the 1 KiB a holding
    // must move, however slow the machine): a client reading all of it at once reads a trickle.
    const body = new Readable({ read() {} });
    let drips = 0;
    const drip = setInterval(() => drips++ < 300 && body.push("xx"), 50);
    body.once("close", () => clearInterval(drip));
    ctx.length = MiB;
    ctx.type = "application/octet-stream";
    ctx.body = body;
  });
  try {
    const trickles = [ask("a", "/big"), ask("a", "/big")];
    await vi.waitFor(() => expect(answers.unsent).toBe(2 * MiB), { timeout: 30_000 });
    // Read all along, as it comes, for longer than a holding may stand still.
    await vi.waitFor(() => expect(trickles[0]?.text()).toMatch(/\r\n\r\nx{20}/), { timeout: 30_000 });
    await new Promise((resolve) => setTimeout(resolve, LIMITS.heldStalledMs + 600));
    expect(trickles.every(({ socket }) => !socket.destroyed)).toBe(true);
    const newcomer = ask("e", "/small");
    await vi.waitFor(() => expect(newcomer.text()).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\nok$/), {
      timeout: 30_000,
    });
    await trickles[0]?.closed;
    for (const { socket } of [...trickles, newcomer]) socket.destroy();
    await vi.waitFor(() => expect(answers.unsent).toBe(0));
  } finally {
    close();
  }
});

it("sees a large answer made in memory move as its client reads it steadily, and keeps it for that client", async () => {
  const MiB = 1024 * 1024;
  // An answer of 64 MiB made in memory (as a query's or a client file's, only larger): far more
  // than the kernel's buffers take at once on loopback.
  const { answers, port, ask, close } = await answersServer(
    { perClient: 128 * MiB, total: 64 * MiB },
    async (ctx) => {
      ctx.body = Buffer.alloc(64 * MiB, "m");
    },
  );
  // Reads 256 KiB (about) every 50 ms, from the first bytes on: the kernel frees room for more of
  // the answer in steps of a few MiB, so a slower reader shows progress less than once a second.
  let read = 0;
  const reader = connect(port, "127.0.0.1", () =>
    reader.write("GET /memory HTTP/1.1\r\nHost: x\r\nX-Client: a\r\n\r\n"),
  );
  reader.on("error", () => {});
  let sinceTick = 0;
  reader.on("data", (chunk: Buffer) => {
    read += chunk.length;
    sinceTick += chunk.length;
    if (sinceTick >= 256 * 1024) reader.pause();
  });
  const steady = setInterval(() => {
    sinceTick = 0;
    reader.resume();
  }, 50);
  // Standing still means 3 s here, not 1: a reader slowed down by a busy machine still moves.
  const limits = LIMITS as { heldStalledMs: number };
  const stalledMs = limits.heldStalledMs;
  limits.heldStalledMs = 3000;
  try {
    await vi.waitFor(() => expect(answers.unsent).toBe(64 * MiB), { timeout: 30_000 });
    await new Promise((resolve) => setTimeout(resolve, LIMITS.heldStalledMs + 600));
    expect(read).toBeLessThan(64 * MiB);
    // The host is full, and the reader above an even share, but its answer moves: a newcomer is
    // refused, and the reader keeps its answer.
    const newcomer = ask("e", "/small");
    await vi.waitFor(() => expect(newcomer.text()).toMatch(/^HTTP\/1\.1 503 /), { timeout: 30_000 });
    expect(reader.destroyed).toBe(false);
    newcomer.socket.destroy();
  } finally {
    limits.heldStalledMs = stalledMs;
    clearInterval(steady);
    reader.destroy();
    close();
  }
});

it("sends a large answer made in memory whole, with its length, and nothing of it to a HEAD", async () => {
  const answers = UnsentAnswers.forHost({ enabled: true, clientAddress: () => "a" });
  const app = new Koa();
  app.use(answers.middleware());
  const text = Array.from({ length: 40_000 }, (_, i) => `line ${i} é\n`).join("");
  app.use(async (ctx) => {
    ctx.type = "text/plain";
    ctx.set("ETag", '"v1"');
    ctx.body = text;
  });
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  try {
    const got = await sendRequest(url);
    expect(Buffer.byteLength(text)).toBeGreaterThan(256 * 1024);
    expect(got.status).toBe(200);
    expect(got.text()).toBe(text);
    expect(got.headers["content-length"]).toBe(String(Buffer.byteLength(text)));
    expect(got.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(got.headers.etag).toBe('"v1"');
    const head = await sendRequest(url, { method: "HEAD" });
    expect([head.status, head.headers["content-length"], head.text()]).toEqual([
      200,
      String(Buffer.byteLength(text)),
      "",
    ]);
    await vi.waitFor(() => expect(answers.unsent).toBe(0));
  } finally {
    server.close();
  }
});

it("leaves an export out: its archive waits on the host's disk, and its client's other requests go on", async () => {
  // Counted as an answer of its length, an unread export over the address's share refused every
  // other request from it (the developer's dashboard, their apps, an office behind one address)
  // while it was read, up to 30 minutes.
  const kim = await developerWithBigDeployment(host, "kim", "bigexport", 2);
  const unread = await startUnreadExport(host, "bigexport", kim.token);
  expect(unread.statusCode).toBe(200);
  expect(Number(unread.headers["content-length"])).toBeGreaterThan(4 * 1024 * 1024);
  const other = await sendRequest(`${host.deploymentUrl("app")}/small`);
  expect(other.status, other.text()).toBe(200);
  unread.destroy();
}, 120_000);
