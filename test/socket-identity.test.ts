/**
 * Identity changes reach open sockets: a WebSocket whose guest signs in (guest upgrade) or whose
 * token expires is closed with the identity-ended close code and never writes as the retired
 * guest (also for mutations sent in the same instant as the upgrade), and platform/client
 * reconnects with a live identity and subscribes again.
 */
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup, sendRequest } from "../cli/http.js";
import { TOKEN_LIFETIME_SECONDS, TokenService } from "../host/auth/index.js";
import { createClient, type PlatformClient } from "../sdk/client/node.js";
import { SYNC_CLOSE } from "../sdk/protocol/index.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let dev: TestHost;
const clients: PlatformClient[] = [];

beforeAll(async () => {
  dev = await startTestHost({ devDeployment: "dev" });
  await dev.deployments.deploy("dev", { code: await fixtureCode("guest-upgrade") });
});
afterAll(async () => {
  for (const made of clients) made.close();
  await dev.dispose();
});

async function post(path: string, body: unknown, token?: string) {
  const response = await sendRequest(`${dev.deploymentUrl("dev")}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: response.json<Record<string, unknown>>() };
}

/** Every note with its owner. */
async function allNotes(): Promise<Array<[string, string]>> {
  const answer = await post("/api/query/everything", {});
  expect(answer.status).toBe(200);
  return (answer.body.value as { notes: Array<[string, string]> }).notes;
}

interface OpenSocket {
  ws: WebSocket;
  results: Map<string, Record<string, unknown>>;
  closed: Promise<{ code: number; reason: string }>;
}

function openSocket(token: string): Promise<OpenSocket> {
  const url = `${dev.deploymentUrl("dev").replace("http", "ws")}/api/sync?platform_token=${encodeURIComponent(token)}`;
  const ws = new WebSocket(url, { lookup: localhostLookup } as WebSocket.ClientOptions);
  const results = new Map<string, Record<string, unknown>>();
  ws.on("message", (data) => {
    const message = JSON.parse(String(data)) as Record<string, unknown>;
    if (message.type === "mutationResult") results.set(message.id as string, message);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once("close", (code, reason) => resolve({ code, reason: String(reason) })),
  );
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve({ ws, results, closed }));
    ws.once("error", reject);
  });
}

/** Resolves when `id` was answered or the socket closed (then undefined). */
async function answerOf(socket: OpenSocket, id: string): Promise<Record<string, unknown> | undefined> {
  while (!socket.results.has(id) && socket.ws.readyState === WebSocket.OPEN)
    await new Promise((resolve) => setTimeout(resolve, 10));
  return socket.results.get(id);
}

describe("an open socket whose identity ends", () => {
  it("is closed with the identity-ended code and never writes as the retired guest, even in a race", async () => {
    const guest = await post("/__platform/auth/guest", {});
    const guestId = guest.body.userId as string;
    const socket = await openSocket(guest.body.token as string);
    socket.ws.send(
      JSON.stringify({ type: "mutation", id: "before", name: "addNote", args: { text: "before" } }),
    );
    expect((await answerOf(socket, "before"))?.error).toBeUndefined();

    // Mutations over the socket before, during and after the upgrade: a burst, then a stream
    // until the upgrade answered or the socket closed.
    const racing: string[] = [];
    const send = () => {
      const id = `race-${racing.length}`;
      racing.push(id);
      socket.ws.send(JSON.stringify({ type: "mutation", id, name: "addNote", args: { text: id } }));
    };
    let answered = false;
    const upgrade = post(
      "/__platform/auth/dev-sign-in",
      { email: "racer@example.com" },
      guest.body.token as string,
    ).finally(() => {
      answered = true;
    });
    for (let i = 0; i < 20; i++) send();
    while (!answered && socket.ws.readyState === WebSocket.OPEN && racing.length < 2000) {
      send();
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const account = await upgrade;
    expect(account.status).toBe(200);
    expect(account.body.upgradedFrom).toBe(guestId);
    // After the upgrade answered, a write on the old socket (if it is still open) must not land as the guest.
    if (socket.ws.readyState === WebSocket.OPEN)
      socket.ws.send(
        JSON.stringify({ type: "mutation", id: "after", name: "addNote", args: { text: "after" } }),
      );
    const answers = await Promise.all([...racing, "after"].map((id) => answerOf(socket, id)));
    const closedWith = await socket.closed;
    console.log(
      `race: ${answers.filter((a) => a && a.error === undefined).length} applied, ` +
        `${answers.filter((a) => a?.error).length} refused, ${answers.filter((a) => !a).length} unanswered; ` +
        `closed ${closedWith.code} ${closedWith.reason}`,
    );
    expect(closedWith.code).toBe(SYNC_CLOSE.identityEnded);

    const notes = await allNotes();
    expect(notes.filter(([owner]) => owner === guestId)).toEqual([]);
    const accountNotes = notes.filter(([owner]) => owner === account.body.userId).map(([, text]) => text);
    expect(accountNotes).toContain("before");
    // Every mutation confirmed as applied was moved to the account with the rest.
    [...racing, "after"].forEach((id, i) => {
      if (answers[i] && answers[i]?.error === undefined) expect(accountNotes).toContain(id);
    });
    // The retired guest's token cannot open a socket again.
    await expect(openSocket(guest.body.token as string)).rejects.toThrow(/401/);
  });

  it("platform/client reconnects with a live identity and subscribes again", async () => {
    const c = createClient(dev.deploymentUrl("dev"));
    clients.push(c as unknown as PlatformClient);
    await c.auth.ready();
    const first = c.auth.getState().identity;
    expect(first?.kind).toBe("guest");
    const seen: unknown[] = [];
    let resolveFresh: () => void = () => {};
    const fresh = new Promise<void>((resolve) => {
      resolveFresh = resolve;
    });
    c.subscribe("whoami", undefined, (who) => {
      seen.push(who);
      if ((who as { userId?: string } | null)?.userId && (who as { userId: string }).userId !== first?.userId)
        resolveFresh();
    });
    await c.mutation("addNote", { text: "from the client" });
    // The same guest signs in elsewhere (another tab, another device): this client's socket is stale.
    const token = await c.auth.token();
    const elsewhere = await post(
      "/__platform/auth/dev-sign-in",
      { email: "elsewhere@example.com" },
      token ?? "",
    );
    expect(elsewhere.body.upgradedFrom).toBe(first?.userId);
    await fresh;
    const now = c.auth.getState().identity;
    expect(now?.userId).not.toBe(first?.userId);
    expect(seen.at(-1)).toMatchObject({ userId: now?.userId });
    await c.mutation("addNote", { text: "after elsewhere" });
    const notes = await allNotes();
    expect(notes.filter(([owner]) => owner === first?.userId)).toEqual([]);
    expect(notes).toContainEqual([now?.userId, "after elsewhere"]);
    expect(notes).toContainEqual([elsewhere.body.userId, "from the client"]);
  });

  it("is closed with the identity-ended code when its token expires", async () => {
    const guest = await post("/__platform/auth/guest", {});
    const claims = decodeJwt(guest.body.token as string);
    // The same session's token, issued as if almost an hour ago: it expires in a few seconds.
    const secret = await dev.deployments.db.records<{ hex: string }>("secrets").get("tokens");
    const tokens = new TokenService(Buffer.from(secret?.hex ?? "", "hex"));
    const expiresInMs = 3000;
    const { token, expiresAt } = await tokens.issue(
      {
        deployment: "dev",
        userId: claims.sub as string,
        kind: "guest",
        session: claims.sid as string,
        issuedAt: claims.ses as number,
        incarnation: claims.inc as string,
      },
      Date.now() - TOKEN_LIFETIME_SECONDS * 1000 + expiresInMs,
    );
    const socket = await openSocket(token);
    const closedWith = await socket.closed;
    console.log(
      `closed ${Date.now() - expiresAt} ms after the token expired: ${closedWith.code} ${closedWith.reason}`,
    );
    expect(closedWith).toEqual({ code: SYNC_CLOSE.identityEnded, reason: "token expired: renew it" });
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt - 1000);
  });
});

describe("an HTTP mutation racing a guest upgrade", () => {
  it("never commits as the retired guest, even when it was authenticated before the upgrade committed", async () => {
    const guest = await post("/__platform/auth/guest", {});
    const guestId = guest.body.userId as string;
    const guestToken = guest.body.token as string;
    expect((await post("/api/mutation/addNote", { text: "http-before" }, guestToken)).status).toBe(200);

    // Writers keep several guest mutations in flight over plain HTTP until the upgrade answered:
    // each is authenticated when it arrives and may wait in the deployment's queue behind the others
    // (and behind the upgrade) before its transaction runs.
    let answered = false;
    const outcomes: Array<{ text: string; status: number }> = [];
    let sent = 0;
    const writer = async () => {
      while (!answered && sent < 2000) {
        const text = `http-race-${sent++}`;
        const response = await post("/api/mutation/addNote", { text }, guestToken);
        outcomes.push({ text, status: response.status });
      }
    };
    const writers = Array.from({ length: 12 }, writer);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const account = await post(
      "/__platform/auth/dev-sign-in",
      { email: "http-racer@example.com" },
      guestToken,
    );
    answered = true;
    await Promise.all(writers);
    expect(account.status).toBe(200);
    expect(account.body.upgradedFrom).toBe(guestId);
    const after = await post("/api/mutation/addNote", { text: "http-after" }, guestToken);
    console.log(
      `http race: ${outcomes.filter((o) => o.status === 200).length} applied, ` +
        `${outcomes.filter((o) => o.status === 401).length} refused; after the upgrade ${after.status}`,
    );
    expect(after.status).toBe(401);
    expect(outcomes.every((o) => o.status === 200 || o.status === 401)).toBe(true);

    const notes = await allNotes();
    expect(notes.filter(([owner]) => owner === guestId)).toEqual([]);
    const accountNotes = notes.filter(([owner]) => owner === account.body.userId).map(([, text]) => text);
    expect(accountNotes).toContain("http-before");
    // Every mutation answered as applied was moved to the account with the rest.
    for (const { text, status } of outcomes) if (status === 200) expect(accountNotes).toContain(text);
  });
});
