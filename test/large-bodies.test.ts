/**
 * Large operator API bodies (a deploy's, up to 60 MB) cost the host's main thread as little as
 * possible: past its first MiB a body with a declared length goes into one buffer of that length,
 * counted whole against the client's and the host's bytes arriving (so holding it back holds no
 * more than is counted), and it is parsed on the JSON thread. The attack: a client declares a
 * large body, sends a little and waits. A real host on loopback, raw sockets, `GET /metrics`.
 */
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

const MIB = 1024 * 1024;
let host: TestHost;
const sockets: Socket[] = [];

beforeAll(async () => {
  host = await startTestHost({
    trustProxy: true,
    bodyArrivalLimits: { perClient: 4 * MIB, total: 16 * MIB },
  });
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await host.dispose();
});

async function arriving(): Promise<number> {
  const metrics = (await host.admin("/metrics", "GET")).text();
  const line = metrics.split("\n").find((l) => l.startsWith("platform_request_body_bytes_arriving "));
  return Number(line?.split(" ")[1]);
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("the host never got there");
}

/** A deploy from `client` declaring `declared` bytes of body, of which only `sent` arrive. */
function heldDeploy(client: string, id: string, declared: number, sent: number): Promise<string> {
  const socket = connect(Number(new URL(host.url).port), "127.0.0.1");
  sockets.push(socket);
  let text = "";
  const answer = new Promise<string>((resolve) => {
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
      if (text.includes("\r\n\r\n") && text.endsWith("}")) resolve(text);
    });
    socket.on("error", () => resolve(text));
  });
  socket.write(
    `PUT /v1/deploys/${id} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${host.adminToken}\r\nX-Forwarded-For: ${client}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
  );
  socket.write(`{"code":"${"x".repeat(sent - 9)}`);
  return answer;
}

it("counts a large body's whole declared length once its first MiB arrived, and gives it back on close", async () => {
  void heldDeploy("10.0.1.1", "held", 3 * MIB, 1.5 * MIB);
  // The first MiB counted as it came, then the whole 3 MiB at once: the buffer it goes into.
  await until(async () => (await arriving()) === 3 * MIB);
  // The same client's next large body passes its 4 MiB: refused at once, nothing else held.
  const second = await heldDeploy("10.0.1.1", "held-too", 2 * MIB, 1.2 * MIB);
  expect(second).toMatch(/^HTTP\/1\.1 429 /);
  expect(second).toContain('"code":"limit_exceeded"');
  for (const socket of sockets) socket.destroy();
  await until(async () => (await arriving()) === 0);
});

it("deploys a large body read that way and parsed off the main thread, byte for byte", async () => {
  const files = [0, 1].map((i) => ({ path: `assets/blob-${i}.bin`, bytes: randomBytes(MIB + i) }));
  const body = JSON.stringify({
    code: await fixtureCode("todo"),
    client: [
      { path: "index.html", data: Buffer.from("<!doctype html><title>big</title>").toString("base64") },
      ...files.map((file) => ({ path: file.path, data: file.bytes.toString("base64") })),
    ],
  });
  expect(body.length).toBeGreaterThan(2 * MIB);
  const deployed = await sendRequest(`${host.url}/v1/deploys/big`, {
    method: "PUT",
    headers: {
      authorization: `Bearer ${host.adminToken}`,
      "content-type": "application/json",
      "x-forwarded-for": "10.0.1.2",
    },
    body,
  });
  expect(deployed.status, deployed.text()).toBe(201);
  for (const file of files) {
    const served = await sendRequest(`${host.deploymentUrl("big")}/${file.path}`, {});
    expect(served.status).toBe(200);
    expect(Buffer.compare(served.body, file.bytes)).toBe(0);
  }
  expect(await arriving()).toBe(0);
});

it("answers a large body that is not JSON, or not an object, as a small one is answered", async () => {
  const send = (body: string) =>
    sendRequest(`${host.url}/v1/deploys/broken`, {
      method: "PUT",
      headers: { authorization: `Bearer ${host.adminToken}`, "content-type": "application/json" },
      body,
    });
  const pad = "x".repeat(2 * MIB);
  const notJson = await send(`{"code":"${pad}"`);
  expect(notJson.status).toBe(400);
  expect(notJson.json()).toEqual({
    error: { code: "bad_request", message: "The request body must be JSON." },
  });
  const notObject = await send(JSON.stringify([pad]));
  expect(notObject.status).toBe(400);
  expect(notObject.json()).toEqual({
    error: { code: "bad_request", message: "The body must be a JSON object." },
  });
  // Deeper than a body may nest: the shape check's own error, from the thread as from the main one.
  const deep = await send(`{"code":"${pad}","env":${"[".repeat(200_000)}${"]".repeat(200_000)}}`);
  const small = await send(`{"env":${"[".repeat(200_000)}${"]".repeat(200_000)}}`);
  expect(deep.status).toBe(small.status);
  expect(deep.json()).toEqual(small.json());
  expect((await host.admin("/v1/deploys/broken", "GET")).status).toBe(404);
});
