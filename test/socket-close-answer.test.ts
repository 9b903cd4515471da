/**
 * A sync socket the host closes (its identity ended) is cut when its client does not answer the
 * close: until the close ended, it kept its subscriptions re-running as an ended identity, for
 * ws's 30 s when the client never answered (a review).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup, sendRequest } from "../cli/http.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("unanswered", "guest-upgrade")).status).toBe(201);
});
afterAll(() => host.dispose());

async function post(path: string, token?: string) {
  const response = await sendRequest(`${host.deploymentUrl("unanswered")}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: "{}",
  });
  return { status: response.status, body: response.json<Record<string, unknown>>() };
}

async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error("not yet");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it("leaves a signed-out socket's subscriptions at once, though its client never answers the close", async () => {
  const token = (await post("/__platform/auth/guest")).body.token as string;
  const url = `${host.deploymentUrl("unanswered").replace("http", "ws")}/api/sync?platform_token=${encodeURIComponent(token)}`;
  const ws = new WebSocket(url, { lookup: localhostLookup } as WebSocket.ClientOptions);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const values: unknown[] = [];
  ws.on("message", (data) => values.push(JSON.parse(String(data))));
  ws.send(JSON.stringify({ type: "subscribe", id: "mine", name: "myNotes", args: {} }));
  const subscribed = () => host.live.subscriberCounts().find(([id]) => id === "unanswered")?.[1] ?? 0;
  await until(() => values.length > 0);
  expect(subscribed()).toBe(1);
  // The client stops reading: the host's close frame goes unanswered.
  (ws as unknown as { _socket: { pause(): void } })._socket.pause();
  expect((await post("/__platform/auth/sign-out", token)).status).toBe(200);
  await until(() => subscribed() === 0);
  ws.terminate();
});
