/**
 * A stored file whose blob no longer has the length its record says (changed on disk behind the
 * host's back, or a store that lies) fails its answer and closes the connection: the download
 * never sends more or fewer bytes than its `Content-Length` on a connection that goes on, which
 * would make the client read the rest as the next answer (or wait forever). A real host, a raw
 * keep-alive connection with a second request pipelined behind the first.
 */
import { appendFile, readdir, truncate } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let token: string;

beforeAll(async () => {
  host = await startTestHost();
  const dev = (await host.admin("/v1/developers", "POST", { name: "blobs" })).json<{ id: string }>();
  const created = await host.admin("/v1/deploys", "POST", {
    id: "files",
    code: await fixtureCode("access"),
    owner: dev.id,
  });
  expect(created.status, created.text()).toBe(201);
  token = (await host.admin("/v1/deploys/files/sessions", "POST", { email: "b@example.com" })).json<{
    token: string;
  }>().token;
});
afterAll(() => host.dispose());

const BODY = "0123456789abcdef";

/** Stores a public text file; its key and the path of its blob on disk. */
async function store(): Promise<{ key: string; blob: string }> {
  const before = new Set(await blobs());
  const stored = await sendRequest(`${host.deploymentUrl("files")}/storage?public=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "text/plain" },
    body: BODY,
  });
  expect(stored.status, stored.text()).toBe(201);
  const blob = (await blobs()).find((path) => !before.has(path));
  return { key: stored.json<{ key: string }>().key, blob: blob as string };
}

/** Every blob file under the host's blob folder. */
async function blobs(): Promise<string[]> {
  const root = join(host.dir, "blobs");
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && !entry.parentPath.includes(".tmp"))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** GETs `key` with a second GET pipelined behind it; everything the host sent until it closed. */
function pipelined(key: string): Promise<string> {
  const { host: authority } = new URL(host.deploymentUrl("files"));
  const socket = connect(Number(new URL(host.url).port), "127.0.0.1");
  const get = `GET /storage/${key} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`;
  socket.write(get + get);
  let received = "";
  socket.on("data", (chunk) => {
    received += chunk.toString("latin1");
  });
  return new Promise((resolve) => {
    socket.on("close", () => resolve(received));
    socket.on("error", () => {});
    // A connection the host keeps open after whole answers: the test ends it once both arrived.
    socket.on("data", () => {
      if (received.split("HTTP/1.1 200").length - 1 === 2 && received.endsWith(BODY)) socket.end();
    });
  });
}

it("serves an intact file to both pipelined requests", async () => {
  const { key } = await store();
  const received = await pipelined(key);
  expect(received.split("HTTP/1.1 200").length - 1).toBe(2);
  expect(received.match(/content-length: 16/gi)).toHaveLength(2);
});

/** The answers in what the host sent, and the bytes after the first answer's head. */
function answers(received: string): { count: number; body: string } {
  return {
    count: received.split("HTTP/1.1 ").length - 1,
    body: received.split("\r\n\r\n").slice(1).join("\r\n\r\n"),
  };
}

it("fails the answer and closes the connection when the blob grew", async () => {
  const { key, blob } = await store();
  await appendFile(blob, "TRAILING BYTES THAT LOOK LIKE HTTP/1.1 200 OK\r\n\r\n");
  // Resolves only once the host closed the connection; the host itself keeps running.
  const { count, body } = answers(await pipelined(key));
  // Cut before or after its head, never past its length, and no second answer on this connection.
  expect(count).toBeLessThanOrEqual(1);
  expect(body.length).toBeLessThanOrEqual(BODY.length);
  expect(body).not.toContain("TRAILING");
  const after = await sendRequest(`${host.deploymentUrl("files")}/storage/${(await store()).key}`, {});
  expect(after.text()).toBe(BODY);
});

it("fails the answer and closes the connection when the blob shrank", async () => {
  const { key, blob } = await store();
  await truncate(blob, 4);
  const { count, body } = answers(await pipelined(key));
  expect(count).toBeLessThanOrEqual(1);
  expect(body.length).toBeLessThan(BODY.length);
});
