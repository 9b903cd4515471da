/**
 * Helpers of the export/import tests: archives over the operator API, a byte-exact dump of what a
 * deployment stores (keys with the deployment id taken out, and values), every query's answer, and
 * rewriting an archive's files (attacks).
 */
import { type IncomingMessage, request } from "node:http";
import yauzl from "yauzl";
import { ZipFile } from "yazl";
import { type HttpResponse, localhostLookup, sendRequest } from "../../cli/http.js";
import { afterPrefix, encodeText } from "../../host/db/codec.js";
import { incarnationKey } from "../../host/db/incarnation.js";
import type { HostDatabase } from "../../host/db/index.js";
import { collect } from "../../host/db/index.js";
import { schemaTagKey } from "../../host/db/served-schema.js";
import { fixtureCode, type TestHost } from "./host.js";
import { storableRandomBytes } from "./random-bytes.js";

/** `GET /v1/deploys/<id>/export` as the operator (or `token`); the archive's bytes. */
export async function exportZip(
  host: TestHost,
  id: string,
  query = "",
  token = host.adminToken,
): Promise<HttpResponse> {
  return sendRequest(`${host.url}/v1/deploys/${id}/export${query}`, {
    headers: { authorization: `Bearer ${token}` },
    timeoutMs: 120_000,
    // An archive is as large as its deployment: not an answer the CLI keeps in memory.
    maxBytes: Number.POSITIVE_INFINITY,
  });
}

/** `POST /v1/deploys/<id>/import` with `zip` as the operator (or `token`). */
export function importZip(
  host: TestHost,
  id: string,
  zip: Buffer,
  query = "",
  token = host.adminToken,
): Promise<HttpResponse> {
  return sendRequest(`${host.url}/v1/deploys/${id}/import${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/zip" },
    body: zip,
    timeoutMs: 120_000,
  });
}

/**
 * Everything deployment `id` stores in the database (rows, index entries, counts, metadata) and
 * its object records, keyed without the deployment's id, so two deployments compare byte for byte.
 * The schema's tag is left out: a random value naming one write of the schema, which a copy writes anew;
 * so is the incarnation the data is marked with, the deployment's own (a copy is another).
 */
export async function dumpDeployment(db: HostDatabase, id: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const encodedId = encodeText(id);
  const schemaTag = schemaTagKey(id);
  // The deployment's own, not its data's: its record's incarnation (host/db/incarnation.ts).
  const incarnation = incarnationKey(id);
  for (const tag of [0x10, 0x11, 0x12, 0x14]) {
    const prefix = Buffer.concat([Buffer.from([tag]), encodedId]);
    for (const [key, value] of await collect(db.store.iterate({ gte: prefix, lt: afterPrefix(prefix) })))
      if (!key.equals(schemaTag) && !key.equals(incarnation))
        out[`${tag.toString(16)}:${key.subarray(prefix.length).toString("hex")}`] = value;
  }
  const objects = db.records<Record<string, unknown>>("objects");
  for (const record of await objects.listPrefix(`${id}/`)) {
    const { deployment: _d, quotaOwner: _q, ...rest } = record;
    out[`object:${String(record.key)}`] = JSON.stringify(rest);
  }
  const totals = await db.records<unknown>("storage-totals").get(id);
  if (totals) out.totals = JSON.stringify(totals);
  return out;
}

/** A query's answer as the HTTP API sends it (status and body text). */
export async function answer(host: TestHost, id: string, name: string, args: unknown = {}, token?: string) {
  const response = await sendRequest(`${host.deploymentUrl(id)}/api/query/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(args),
  });
  return `${response.status} ${response.text()}`;
}

/** The files of a zip archive. */
export async function unzipAll(zip: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const archive = await yauzl.fromBufferPromise(zip, { lazyEntries: true });
  for await (const entry of archive.eachEntry()) {
    const chunks: Buffer[] = [];
    for await (const chunk of await archive.openReadStreamPromise(entry)) chunks.push(chunk as Buffer);
    files.set(entry.fileName, Buffer.concat(chunks));
  }
  return files;
}

/** A zip archive of `files`. */
export function zipAll(files: Map<string, Buffer>): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [name, data] of files) zip.addBuffer(data, name);
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on("data", (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on("end", () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on("error", reject);
  });
}

/** `zip` with `change` applied to its files. */
export async function rewriteZip(zip: Buffer, change: (files: Map<string, Buffer>) => void): Promise<Buffer> {
  const files = await unzipAll(zip);
  change(files);
  return zipAll(files);
}

/**
 * A developer `name` and their deployment `id` on `host` holding `files` files of 5 MB that do not
 * compress (by default 30 MB: far more than loopback's socket buffers take of an unread answer).
 */
export async function developerWithBigDeployment(
  host: TestHost,
  name: string,
  id: string,
  files = 6,
): Promise<{ token: string; id: string }> {
  const developer = (await host.admin("/v1/developers", "POST", { name })).json<{
    token: string;
    id: string;
  }>();
  const created = await host.admin("/v1/deploys", "POST", {
    id,
    code: await fixtureCode("transfer"),
    owner: developer.id,
  });
  if (created.status !== 201) throw new Error(`deploy of ${id}: ${created.status} ${created.text()}`);
  const token = (
    await host.admin(`/v1/deploys/${id}/sessions`, "POST", { email: `${name}@example.com` })
  ).json<{ token: string }>().token;
  for (let i = 0; i < files; i++) {
    const bytes = storableRandomBytes(5_000_000);
    bytes.fill(0, 0, 16);
    const stored = await sendRequest(`${host.deploymentUrl(id)}/storage`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
      body: bytes,
    });
    if (stored.status !== 201) throw new Error(`upload to ${id}: ${stored.status} ${stored.text()}`);
  }
  return developer;
}

/** Starts an export of `id` on `host` with `token` and reads none of it (its answer is paused). */
export function startUnreadExport(host: TestHost, id: string, token: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const sent = request(
      `${host.url}/v1/deploys/${id}/export`,
      { headers: { authorization: `Bearer ${token}` }, lookup: localhostLookup },
      (res) => {
        res.pause();
        resolve(res);
      },
    );
    sent.on("error", reject);
    sent.end();
  });
}
