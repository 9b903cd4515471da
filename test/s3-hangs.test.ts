/**
 * An S3 server that stops answering (a real s3rver behind a loopback proxy that, once told to,
 * accepts connections and never answers): the blob store gives up within `LIMITS.s3*`, an upload
 * is `503`, and `/readyz` gives up its own request rather than leave it holding one of the
 * client's sockets. Before, nothing timed out: each probe of a hung bucket kept a socket for
 * good, and 50 of them stalled every tenant's files.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { sendRequest } from "../cli/http.js";
import { S3BlobStore, type S3Settings } from "../host/storage/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deployOwnedWithSession, startTestHost, type TestHost } from "./helpers/host.js";

let s3: S3rver;
let directory: string;
let upstreamPort: number;

/** Passes connections to s3rver until {@link hang}; from then on accepts them and says nothing. */
class HangingProxy {
  private hanging = false;
  private readonly piped = new Set<Socket>();
  /** Connections accepted while hanging that are still open. */
  readonly held = new Set<Socket>();
  private readonly server: Server = createServer((socket) => {
    if (this.hanging) {
      this.held.add(socket);
      socket.on("close", () => this.held.delete(socket));
      socket.on("error", () => {});
      // Read (and drop) what comes, so the client's leaving is seen.
      socket.resume();
      return;
    }
    const upstream = connect(upstreamPort, "127.0.0.1");
    this.piped.add(socket);
    socket.on("close", () => this.piped.delete(socket));
    for (const end of [socket, upstream]) end.on("error", () => {});
    socket.pipe(upstream).pipe(socket);
    socket.on("close", () => upstream.destroy());
    upstream.on("close", () => socket.destroy());
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** Drops the connections passed so far; every connection from now on hangs. */
  hang(): void {
    this.hanging = true;
    for (const socket of this.piped) socket.destroy();
  }

  close(): Promise<void> {
    for (const socket of [...this.piped, ...this.held]) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const limits = LIMITS as unknown as Record<"s3ConnectMs" | "s3AnswerMs" | "s3SilenceMs", number>;
const saved = { ...limits };
afterEach(() => Object.assign(limits, saved));

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "platform-s3-hang-"));
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory });
  upstreamPort = (await s3.run()).port;
});
afterAll(async () => {
  await s3?.close();
  await rm(directory, { recursive: true, force: true });
});

/** One small file uploaded to deployment `files` with `token`. */
const upload = (host: TestHost, token: string) =>
  sendRequest(`${host.deploymentUrl("files")}/storage`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
    body: Buffer.from("bytes"),
  });

const settings = (endpoint: string): S3Settings => ({
  endpoint,
  bucket: `b${randomBytes(6).toString("hex")}`,
  credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  createBucket: true,
});

it("gives up reads, writes and readiness checks of a bucket that stopped answering", async () => {
  Object.assign(limits, { s3ConnectMs: 500, s3AnswerMs: 500, s3SilenceMs: 500 });
  const proxy = new HangingProxy();
  const store = await S3BlobStore.open(settings(await proxy.listen()));
  try {
    await store.put("d/private/x", Buffer.from("bytes"));
    expect((await store.get("d/private/x"))?.toString()).toBe("bytes");
    proxy.hang();
    await expect(store.get("d/private/x")).rejects.toThrow();
    await expect(store.put("d/private/y", Buffer.from("more"))).rejects.toThrow();
    const checked = new AbortController();
    const ready = store.ready(checked.signal);
    checked.abort();
    await expect(ready).rejects.toThrow();
  } finally {
    store.close();
    await proxy.close();
  }
}, 60_000);

it("leaves no request of /readyz behind while the bucket hangs", async () => {
  // The answer's limit stays long here: /readyz's own deadline (2 s) must be what ends its request.
  Object.assign(limits, { s3ConnectMs: 500, s3AnswerMs: 30_000, s3SilenceMs: 30_000 });
  const proxy = new HangingProxy();
  const host = await startTestHost({ s3: settings(await proxy.listen()) });
  try {
    expect((await sendRequest(`${host.url}/readyz`)).status).toBe(200);
    proxy.hang();
    for (let probe = 0; probe < 3; probe++)
      expect((await sendRequest(`${host.url}/readyz`)).status).toBe(503);
    // Each probe's request was given up with it: none still holds a connection to the bucket.
    await vi.waitFor(() => expect(proxy.held.size).toBe(0), { timeout: 10_000, interval: 50 });
  } finally {
    await host.dispose();
    await proxy.close();
  }
}, 60_000);

it("answers an upload 503 while the bucket hangs, and a host does not start on one", async () => {
  Object.assign(limits, { s3ConnectMs: 500, s3AnswerMs: 500, s3SilenceMs: 500 });
  const proxy = new HangingProxy();
  const endpoint = await proxy.listen();
  const host = await startTestHost({ s3: settings(endpoint) });
  try {
    const token = await deployOwnedWithSession(host, "files", "access", "a@example.com");
    proxy.hang();
    const uploaded = await upload(host, token);
    expect(uploaded.status, uploaded.text()).toBe(503);
    expect(uploaded.json<{ error: { code: string } }>().error.code).toBe("unavailable");
    // A host cannot start on a bucket that does not answer: it fails rather than wait forever.
    await expect(startTestHost({ s3: settings(endpoint) })).rejects.toThrow();
  } finally {
    await host.dispose();
    await proxy.close();
  }
}, 60_000);

it("refuses an upload to a full store before it writes anything, even while the bucket hangs", async () => {
  Object.assign(limits, { s3ConnectMs: 500, s3AnswerMs: 500, s3SilenceMs: 500 });
  const proxy = new HangingProxy();
  // Two files fill it: each counts 4 KiB at least.
  const host = await startTestHost({
    s3: settings(await proxy.listen()),
    storageLimits: { perDeveloper: 8192 },
  });
  try {
    const token = await deployOwnedWithSession(host, "files", "access", "a@example.com");
    for (let i = 0; i < 2; i++) expect((await upload(host, token)).status).toBe(201);
    proxy.hang();
    // Before, its bytes were written first (here: until the bucket's timeouts, then 503).
    const refused = await upload(host, token);
    expect(refused.status, refused.text()).toBe(413);
    expect(refused.json<{ error: { code: string } }>().error.code).toBe("quota_exceeded");
    expect(proxy.held.size).toBe(0);
  } finally {
    await host.dispose();
    await proxy.close();
  }
}, 60_000);
