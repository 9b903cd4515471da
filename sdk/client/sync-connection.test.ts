/**
 * SyncConnection against stand-in sockets on fake timers: how many sockets a client opens while a
 * host closes each one soon after opening it (per close code), and that a hostile or broken frame,
 * or an app listener that throws, never escapes into the socket's handlers.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { SYNC_CLOSE } from "../protocol/sync-close.js";
import { STABLE_SOCKET_MS } from "./reconnect-backoff.js";
import { SyncConnection } from "./sync-connection.js";
import type { SocketLike } from "./transport.js";

/** A socket whose far end the test plays; `close` ends it a tick later, as a browser's does. */
class StandInSocket implements SocketLike {
  readyState = 0;
  protocol = "";
  readonly sent: string[] = [];
  onopen: SocketLike["onopen"] = null;
  onmessage: SocketLike["onmessage"] = null;
  onclose: SocketLike["onclose"] = null;
  onerror: SocketLike["onerror"] = null;

  send(data: string): void {
    this.sent.push(data);
  }
  close(code = 1000, reason = ""): void {
    setTimeout(() => this.end(code, reason), 0);
  }
  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  receive(text: string): void {
    this.onmessage?.({ data: text });
  }
  end(code: number, reason = ""): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
}

/** More sockets than this and the test has failed: the next ones never open (no endless loop). */
const CAP = 200;

/**
 * A host that opens each socket 1 ms after it is made and closes it with `code` `openMs` later;
 * `sockets` records each socket with when it was made.
 */
function closingHost(code: number, openMs: number) {
  const sockets: Array<{ socket: StandInSocket; madeAt: number }> = [];
  const factory = (_url: string) => {
    const socket = new StandInSocket();
    sockets.push({ socket, madeAt: Date.now() });
    if (sockets.length <= CAP)
      setTimeout(() => {
        socket.open();
        setTimeout(() => socket.end(code), openMs);
      }, 1);
    return socket;
  };
  return { sockets, factory };
}

/** A connection with one subscription (so it wants a socket); a 4001 renews the token, as AuthSession does. */
function connectionTo(factory: (url: string) => SocketLike) {
  let tokens = 0;
  const connection: SyncConnection = new SyncConnection(
    "ws://app.localhost/api/sync",
    factory,
    async () => `T${tokens}`,
    async () => {
      // AuthSession's renewal: a new token, whose listener reconnects before this answers.
      tokens++;
      connection.reconnect();
      return true;
    },
  );
  connection.subscribe("list", "{}", () => {});
  return connection;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

for (const [code, why] of [
  [1011, "its database lookup failed"],
  [1008, "over its byte budget"],
  [1013, "a slow consumer"],
  [SYNC_CLOSE.hostRestarting, "restarting, again and again"],
  [SYNC_CLOSE.identityEnded, "ending the identity, each renewed token's too"],
] as const) {
  it(`a host closing every socket with ${code} right after it opened (${why}) meets the growing backoff`, async () => {
    const host = closingHost(code, 1);
    const connection = connectionTo(host.factory);
    await vi.advanceTimersByTimeAsync(60_000);
    connection.close();
    // 100 ms doubling to 10 s, at least half of each: at most 18 sockets in a minute. Resetting on
    // open gave one every 50-100 ms (1012 and 4001: at once), up to the cap.
    expect(host.sockets.length).toBeGreaterThanOrEqual(5);
    expect(host.sockets.length).toBeLessThanOrEqual(20);
  });
}

it("after a socket that stayed open a while, a restarting host (1012) is left at once and others within 100 ms", async () => {
  for (const code of [SYNC_CLOSE.hostRestarting, 1011]) {
    const host = closingHost(code, STABLE_SOCKET_MS);
    const connection = connectionTo(host.factory);
    await vi.advanceTimersByTimeAsync(60_000);
    connection.close();
    expect(host.sockets.length).toBeGreaterThanOrEqual(5);
    for (let i = 1; i < host.sockets.length; i++) {
      const gap = (host.sockets[i]?.madeAt ?? 0) - (host.sockets[i - 1]?.madeAt ?? 0) - 1 - STABLE_SOCKET_MS;
      if (code === SYNC_CLOSE.hostRestarting) expect(gap).toBe(0);
      else expect(gap).toBeLessThanOrEqual(100);
    }
  }
});

it("a new identity's reconnect (sign-in, sign-out) is at once however often: the client's own close is no failure", async () => {
  // A host that keeps every socket open.
  const host = closingHost(1000, 24 * 60 * 60_000);
  const connection = connectionTo(host.factory);
  await vi.advanceTimersByTimeAsync(10);
  for (let i = 0; i < 8; i++) {
    await vi.advanceTimersByTimeAsync(1500);
    const before = host.sockets.length;
    const at = Date.now();
    connection.reconnect();
    await vi.advanceTimersByTimeAsync(5);
    expect(host.sockets.length).toBe(before + 1);
    expect((host.sockets.at(-1)?.madeAt ?? 0) - at).toBeLessThanOrEqual(1);
  }
  connection.close();
});

/** A connection whose one socket the test opens, with `listeners` on query `list`. */
async function openConnection(...listeners: Array<(result: unknown) => void>) {
  let socket: StandInSocket | undefined;
  const connection = new SyncConnection(
    "ws://app.localhost/api/sync",
    (_url: string) => {
      socket = new StandInSocket();
      return socket;
    },
    async () => null,
    async () => false,
  );
  for (const listener of listeners) connection.subscribe("list", "{}", listener);
  await vi.advanceTimersByTimeAsync(0);
  if (!socket) throw new Error("no socket was opened");
  socket.open();
  const id = (JSON.parse(socket.sent[0] ?? "{}") as { id?: string }).id;
  return { connection, socket, id };
}

it("ignores frames that are not JSON objects (null crashed a Node process inside ws's handler)", async () => {
  const seen: unknown[] = [];
  const { connection, socket, id } = await openConnection((result) => seen.push(result));
  for (const frame of ["null", "42", '"value"', "true", "[]", "[null]", "not json"])
    expect(() => socket.receive(frame)).not.toThrow();
  socket.receive(JSON.stringify({ type: "value", id, value: [1] }));
  expect(seen).toEqual([{ value: [1] }]);
  expect(connection.state).toBe("open");
  connection.close();
});

it("a listener that throws is reported, and neither escapes into the socket's handler nor silences the others", async () => {
  const errors = vi.spyOn(console, "error").mockImplementation(() => {});
  const seen: unknown[] = [];
  const { connection, socket, id } = await openConnection(
    () => {
      throw new Error("the app's bug");
    },
    (result) => seen.push(result),
  );
  expect(() => socket.receive(JSON.stringify({ type: "value", id, value: [1] }))).not.toThrow();
  expect(seen).toEqual([{ value: [1] }]);
  expect(errors).toHaveBeenCalledWith(
    expect.any(String),
    expect.objectContaining({ message: "the app's bug" }),
  );
  connection.close();
});

it("a mutation that could not be sent (no socket would open) fails with unavailable 60 s after it was made", async () => {
  // Each socket closes before it ever opened, as when the host is down.
  const refusing = (_url: string) => {
    const socket = new StandInSocket();
    setTimeout(() => socket.end(1006), 1);
    return socket;
  };
  const connection = new SyncConnection(
    "ws://app.localhost/api/sync",
    refusing,
    async () => null,
    async () => false,
  );
  const state: { error?: unknown } = {};
  connection.mutation("add", "{}").catch((error: unknown) => (state.error = error));
  await vi.advanceTimersByTimeAsync(59_000);
  expect(state.error).toBeUndefined();
  await vi.advanceTimersByTimeAsync(2000);
  expect(state.error).toMatchObject({ code: "unavailable", message: expect.stringMatching(/not applied/) });
  expect(connection.wanted).toBe(false);
  connection.close();
});

it("a mutation sent on an open socket keeps waiting for its answer past 60 s", async () => {
  const { connection, socket } = await openConnection(() => {});
  const state: { value?: unknown } = {};
  void connection.mutation("add", "{}").then((value) => (state.value = value));
  await vi.advanceTimersByTimeAsync(61_000);
  const sent = socket.sent.map((text) => JSON.parse(text) as { type: string; id: string });
  const id = sent.find((message) => message.type === "mutation")?.id;
  socket.receive(JSON.stringify({ type: "mutationResult", id, value: 7 }));
  await vi.advanceTimersByTimeAsync(0);
  expect(state.value).toBe(7);
  connection.close();
});
