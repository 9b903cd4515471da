/**
 * Large operator API bodies (a deploy's, up to 60 MB) cost the host's main thread as little as
 * possible: past half of it a body with a declared length goes into one buffer of that length,
 * and it is parsed on the JSON thread. The attack: clients declare large bodies, send a little and
 * wait; they hold of every tenant's bytes arriving only what they sent. A real host on loopback,
 * raw sockets, `GET /metrics`.
 */
import type { Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { arrivingBytes, rawRequest, until } from "./helpers/arrivals.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";
import { storableRandomBytes } from "./helpers/random-bytes.js";

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

const arriving = () => arrivingBytes(host);

/** A deploy from `client` declaring `declared` bytes of body, of which only `sent` arrive. */
function heldDeploy(client: string, id: string, declared: number, sent: number): Promise<string> {
  return rawRequest(
    host,
    sockets,
    `PUT /v1/deploys/${id} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${host.adminToken}\r\nX-Forwarded-For: ${client}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
    `{"code":"${"x".repeat(sent - 9)}`,
  );
}

it("counts what a large body sent, not what it declared, and gives it back on close", async () => {
  // Ten addresses each declare a deploy of 2.5 MiB and send 1.25 MiB of it (half: the rest
  // goes into one buffer of the declared length): they hold of the arrivals what they sent.
  for (let i = 0; i < 10; i++) void heldDeploy(`10.0.1.${i + 10}`, `held-${i}`, 2.5 * MIB, 1.25 * MIB);
  await until(async () => (await arriving()) === 12.5 * MIB);
  // Every tenant's bodies still arrive: another client's deploy is read and answered.
  const other = await sendRequest(`${host.url}/v1/deploys/other`, {
    method: "PUT",
    headers: {
      authorization: `Bearer ${host.adminToken}`,
      "content-type": "application/json",
      "x-forwarded-for": "10.0.1.99",
    },
    body: JSON.stringify({
      code: await fixtureCode("todo"),
      client: [{ path: "pad.bin", data: storableRandomBytes(1.5 * MIB).toString("base64") }],
    }),
  });
  expect(other.status, other.text()).toBe(201);
  // One address's bodies together still stop at its own budget (4 MiB here): 1.25 MiB held, and
  // this one passes it part way.
  const over = await heldDeploy("10.0.1.10", "held-more", 50 * MIB, 3 * MIB);
  expect(over).toMatch(/^HTTP\/1\.1 429 /);
  expect(over).toContain('"code":"limit_exceeded"');
  for (const socket of sockets) socket.destroy();
  await until(async () => (await arriving()) === 0);
});

it("deploys a large body read that way and parsed off the main thread, byte for byte", async () => {
  const files = [0, 1].map((i) => ({ path: `assets/blob-${i}.bin`, bytes: storableRandomBytes(MIB + i) }));
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
  // A client file's data that is not strict base64, in a body large enough to be decoded on the
  // JSON thread: refused by the deploy's own check, as in a small body.
  const code = await fixtureCode("todo");
  const files = (data: string) => [
    { path: "pad.bin", data: Buffer.alloc(MIB).toString("base64") },
    { path: "bad.bin", data },
  ];
  for (const data of ["not base64!", "QUJD=", "QU=D"]) {
    const large = await send(JSON.stringify({ code, client: files(data) }));
    const smallBody = await send(JSON.stringify({ code, client: files(data).slice(1) }));
    expect(large.status, data).toBe(smallBody.status);
    expect(large.json(), data).toEqual(smallBody.json());
  }
  expect((await host.admin("/v1/deploys/broken", "GET")).status).toBe(404);
});
