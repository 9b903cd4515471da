/**
 * A host's graceful shutdown in one process (`PlatformHost.drain`, what `platform host` runs on
 * `SIGTERM`): it stops listening at once, answers every mutation a sync socket handed it before
 * the drain, runs none that arrive after it, and closes the socket with 1012.
 */
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { SYNC_CLOSE } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";
import { connectSync } from "./helpers/sync-socket.js";

let host: TestHost;
let probe: TestHost | undefined;
let hostClosed = false;

beforeAll(async () => {
  host = await startTestHost({ requestQuota: false });
  expect((await host.deployFixture("ledger", "ledger")).status).toBe(201);
}, 60_000);
afterAll(async () => {
  await probe?.dispose();
  if (hostClosed) await rm(host.dir, { recursive: true, force: true });
  else await host?.dispose();
});

it("answers every mutation taken before the drain, runs none sent after it, and closes sync sockets with 1012", async () => {
  const url = host.deploymentUrl("ledger");
  const socket = await connectSync(url);
  const closed = new Promise<number>((resolve) => socket.ws.once("close", (code) => resolve(code)));
  const tags = Array.from({ length: 60 }, (_, i) => `drain-${i}`);
  const send = (i: number) =>
    socket.ws.send(
      JSON.stringify({
        type: "mutation",
        id: String(i),
        name: "add",
        args: { tag: tags[i] },
        idempotencyKey: randomUUID(),
      }),
    );
  let draining: Promise<void> | undefined;
  socket.ws.on("message", () => {
    if (draining) return;
    // Drain once the first answer is back (later ones are in flight or queued), then send more.
    draining = host.drain();
    for (let i = 40; i < 60; i++) send(i);
  });
  for (let i = 0; i < 40; i++) send(i);
  expect(await closed).toBe(SYNC_CLOSE.hostRestarting);
  await draining;
  // New connections are refused: a balancer sends them to another host.
  await expect(sendRequest(`${url}/api/query/count`, { method: "POST", body: "{}" })).rejects.toThrow(
    /ECONNREFUSED/,
  );
  const answered = new Set(socket.messages.filter((m) => m.type === "mutationResult").map((m) => m.id));
  expect(answered.size).toBeGreaterThan(0);
  // Sent after the drain began: not taken, never answered (the client resends them elsewhere).
  for (let i = 40; i < 60; i++) expect(answered.has(String(i))).toBe(false);
  for (const m of socket.messages) if (m.type === "mutationResult") expect(m.error).toBeUndefined();
  // Read what was stored through a second host on the same data once this one has closed.
  await host.close();
  hostClosed = true;
  probe = await startTestHost({ data: host.dir, requestQuota: false });
  for (const [i, tag] of tags.entries()) {
    const stored = (await probe.call("ledger", "query", "tagCount", { tag })).json<{ value: number }>().value;
    // Answered: applied once. Unanswered: the host never ran it; the client sends it elsewhere.
    expect(stored, tag).toBe(answered.has(String(i)) ? 1 : 0);
  }
}, 60_000);
