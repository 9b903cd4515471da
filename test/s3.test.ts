/**
 * The S3 blob store against a real S3-protocol server on loopback (s3rver): the blob-store
 * conformance suite the filesystem store runs, and a host keeping uploads in the bucket.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { sendRequest } from "../cli/http.js";
import { S3BlobStore, type S3Settings } from "../host/storage/index.js";
import { blobStoreConformance } from "./helpers/blob-store-conformance.js";
import { deployOwnedWithSession, startTestHost } from "./helpers/host.js";
import { storableRandomBytes } from "./helpers/random-bytes.js";

let server: S3rver;
let directory: string;
let endpoint: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "platform-s3-"));
  server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory });
  const { port } = await server.run();
  // Idle connections stay until their client closes them (a host that never closed its S3 client
  // would otherwise look closed after Node's 5 s keep-alive timeout).
  (server as unknown as { httpServer: Server }).httpServer.keepAliveTimeout = 0;
  endpoint = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await server?.close();
  await rm(directory, { recursive: true, force: true });
});

const settings = (bucket: string): S3Settings => ({
  endpoint,
  bucket,
  credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  createBucket: true,
});

blobStoreConformance("S3 blob store (s3rver)", async () => {
  const store = await S3BlobStore.open(settings(`b${randomBytes(6).toString("hex")}`));
  return { store, dispose: async () => store.close() };
});

/** How many connections the S3 server has open now. */
function s3Connections(): Promise<number> {
  const http = (server as unknown as { httpServer: Server }).httpServer;
  return new Promise<number>((resolve) => http.getConnections((_, n) => resolve(n)));
}

it("refuses a missing bucket unless asked to create it, and keeps no connection open", async () => {
  await expect(S3BlobStore.open({ ...settings("never-made"), createBucket: false })).rejects.toThrow();
  // Its client's connection stayed open for the process's life.
  await vi.waitFor(async () => expect(await s3Connections()).toBe(0), { timeout: 20_000, interval: 50 });
});

it("keeps a host's uploads in the bucket", async () => {
  const bucket = `h${randomBytes(6).toString("hex")}`;
  const host = await startTestHost({ s3: settings(bucket) });
  try {
    const token = await deployOwnedWithSession(host, "files", "access", "a@example.com");
    const bytes = storableRandomBytes(300_000);
    const uploaded = await sendRequest(`${host.deploymentUrl("files")}/storage?public=true`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
      body: bytes,
    });
    expect(uploaded.status, uploaded.text()).toBe(201);
    const { key, url } = uploaded.json<{ key: string; url: string }>();
    expect((await sendRequest(url)).body.equals(bytes)).toBe(true);
    const store = await S3BlobStore.open(settings(bucket));
    expect(await store.list("files/")).toEqual([`files/${key}`]);
    expect((await store.get(`files/${key}`))?.equals(bytes)).toBe(true);
    store.close();
  } finally {
    await host.dispose();
  }
  // The host closed its S3 client's connections as it closed (they stayed open for its process's life).
  await vi.waitFor(async () => expect(await s3Connections()).toBe(0), { timeout: 20_000, interval: 50 });
});
