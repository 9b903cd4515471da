import { createHash } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { HostDatabase, LockFence, RecordStore } from "../db/index.js";
import type { ClientFile } from "./client-input.js";
import { OwnerSharedCache } from "./owner-shared-cache.js";
import type { ClientRef } from "./records.js";
import type { DeploymentScopedState } from "./removal.js";

/** One file of a stored client: its path, the SHA-256 of its bytes, and its size. */
export interface ClientManifestEntry {
  path: string;
  hash: string;
  size: number;
}

/** A client file found for a request: its manifest entry, and its bytes when they were asked for. */
export interface FoundClientFile {
  entry: ClientManifestEntry;
  bytes: Buffer | undefined;
}

/**
 * What a version's path map is counted as holding: about 160 bytes a file (its entry, its hash's
 * 64 characters, the map's slot) beside its path, two bytes a character (V8 keeps a string of any
 * character beyond Latin-1 at two bytes each). An estimate that follows the heap a map takes.
 */
function pathMapBytes(entries: readonly ClientManifestEntry[]): number {
  let bytes = 0;
  for (const entry of entries) bytes += 160 + 2 * entry.path.length;
  return bytes;
}

/** Records removed in one batch by {@link ClientFileStore.sweep}. */
const SWEEP_BATCH = 500;
/** Bytes of files written in one batch while a deploy stores its client. */
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * The deployed web clients of a host, in the database (so every host sharing it serves the same
 * files). A file is stored once per deployment under `<id>/<sha256>`, a version's manifest (path to
 * hash) under `<id>/<manifest hash>`, and the deployment record names the manifest it serves: a
 * deploy stores files and manifest first and switches the record last, so a failed deploy keeps
 * the previous client, and a request sees one version whole. Everything sits under `<id>/`, removed
 * with the deployment; each deploy, once switched, removes what the version it serves does not
 * name (a crashed deploy's leftovers too).
 */
export class ClientFileStore implements DeploymentScopedState {
  private readonly files: RecordStore<{ data: string }>;
  private readonly manifests: RecordStore<{ files: ClientManifestEntry[] }>;
  /** Files kept decoded (they are immutable by hash), each counted against its owner. */
  private readonly decoded = new OwnerSharedCache<Buffer>({
    bytes: LIMITS.clientFileCacheBytes,
    bytesPerOwner: LIMITS.clientFileCacheBytesPerOwner,
    entries: Number.POSITIVE_INFINITY,
  });
  /** Reads of files not in {@link decoded} under way: requests missing together share one. */
  private readonly reading = new Map<string, Promise<Buffer | undefined>>();
  /** Versions' path maps (a manifest never changes under its hash), each counted against its owner. */
  private readonly indexes = new OwnerSharedCache<Map<string, ClientManifestEntry>>({
    bytes: LIMITS.clientPathCacheBytes,
    bytesPerOwner: LIMITS.clientPathCacheBytesPerOwner,
    entries: LIMITS.clientPathCacheVersions,
  });

  constructor(db: HostDatabase) {
    this.files = db.records("client-files");
    this.manifests = db.records("client-manifests");
  }

  /**
   * Stores `files` as a new client version of deployment `id` (files the `current` version holds
   * already are not written again) and returns its reference, undefined for no files, with the
   * hashes written (for {@link discard} when the deploy then fails).
   */
  async stage(
    id: string,
    files: readonly ClientFile[],
    current: ClientRef | undefined,
  ): Promise<{ ref: ClientRef | undefined; written: string[] }> {
    if (files.length === 0) return { ref: undefined, written: [] };
    const stored = new Set((await this.entries(id, current))?.map((entry) => entry.hash) ?? []);
    const written: string[] = [];
    let batch: Array<{ id: string; value: { data: string } }> = [];
    let batchBytes = 0;
    for (const file of files) {
      if (stored.has(file.hash) || written.includes(file.hash)) continue;
      batch.push({ id: `${id}/${file.hash}`, value: { data: file.bytes.toString("base64") } });
      written.push(file.hash);
      batchBytes += file.bytes.length;
      if (batchBytes >= BATCH_BYTES) {
        await this.files.batch(batch);
        batch = [];
        batchBytes = 0;
      }
    }
    if (batch.length > 0) await this.files.batch(batch);
    const entries = files
      .map((file) => ({ path: file.path, hash: file.hash, size: file.bytes.length }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const manifest = createHash("sha256").update(JSON.stringify(entries)).digest("hex");
    await this.manifests.put(`${id}/${manifest}`, { files: entries });
    const bytes = entries.reduce((sum, entry) => sum + entry.size, 0);
    return { ref: { manifest, files: entries.length, bytes }, written };
  }

  /**
   * Removes every client record of deployment `id` but version `served`'s: the version it
   * replaced, and whatever a deploy that crashed before its switch, or before this sweep, left.
   * Runs after the record names `served`, holding the id's lifecycle lock (taken on every host
   * sharing the database), so no other deploy of `id` stages files meanwhile; a request that still
   * read the old record finds a file missing and reads the record again
   * ({@link DeploymentService.clientFile}). Ids are read from keys alone, a few thousand at most.
   * `fence` is that lock's: should it be lost, another deploy may be staging files, left alone.
   */
  async sweep(id: string, served: ClientRef | undefined, fence?: LockFence): Promise<void> {
    const entries = await this.entries(id, served);
    // The record names a manifest that cannot be read: keep everything rather than guess.
    if (served && !entries) return;
    const keep = new Set((entries ?? []).map((entry) => `${id}/${entry.hash}`));
    const files = (await this.files.idsUnder(`${id}/`)).filter((key) => !keep.has(key));
    for (let at = 0; at < files.length; at += SWEEP_BATCH)
      await this.files.batch(
        files.slice(at, at + SWEEP_BATCH).map((key) => ({ id: key, value: null })),
        [],
        fence,
      );
    const manifest = served ? `${id}/${served.manifest}` : undefined;
    const manifests = (await this.manifests.idsUnder(`${id}/`)).filter((key) => key !== manifest);
    await this.manifests.batch(
      manifests.map((key) => ({ id: key, value: null })),
      [],
      fence,
    );
  }

  /**
   * Undoes {@link stage} after a failed deploy: removes the files it wrote that `current` does not
   * hold; `fence` as {@link sweep}'s.
   */
  async discard(
    id: string,
    staged: { ref: ClientRef | undefined; written: string[] },
    current: ClientRef | undefined,
    fence?: LockFence,
  ): Promise<void> {
    if (staged.ref && staged.ref.manifest !== current?.manifest)
      await this.manifests.delete(`${id}/${staged.ref.manifest}`, fence);
    await this.files.batch(
      staged.written.map((hash) => ({ id: `${id}/${hash}`, value: null })),
      [],
      fence,
    );
  }

  /**
   * The file at `path` of client version `ref` of deployment `id` (its bytes read only when
   * `withBytes`; they and the version's paths kept in memory as `owner`'s), undefined when the
   * version has no such path, or `missing` when the version itself is gone (replaced since `ref`
   * was read).
   */
  async lookup(
    id: string,
    ref: ClientRef,
    path: string,
    withBytes: boolean,
    owner = id,
  ): Promise<FoundClientFile | undefined | "missing"> {
    const index = await this.index(id, ref, owner);
    if (!index) return "missing";
    const entry = index.get(path);
    if (!entry) return undefined;
    if (!withBytes) return { entry, bytes: undefined };
    const bytes = await this.bytes(`${id}/${entry.hash}`, owner);
    return bytes ? { entry, bytes } : "missing";
  }

  /** Bytes of files kept decoded in memory: counted against `owner`, or in all (tests read it). */
  cachedBytes(owner?: string): number {
    return this.decoded.bytes(owner);
  }

  /** Bytes of versions' path maps kept in memory, as counted: `owner`'s, or in all (tests read it). */
  cachedPathBytes(owner?: string): number {
    return this.indexes.bytes(owner);
  }

  /** Removes every client file and manifest of a deleted deployment (idempotent); `fence`: its lifecycle lock's. */
  async purgeDeployment(id: string, _quotaOwner?: string, fence?: LockFence): Promise<void> {
    await this.files.deletePrefix(`${id}/`, fence);
    await this.manifests.deletePrefix(`${id}/`, fence);
    this.indexes.forgetPrefix(`${id}/`);
    this.decoded.forgetPrefix(`${id}/`);
    for (const key of [...this.reading.keys()]) if (key.startsWith(`${id}/`)) this.reading.delete(key);
  }

  private async entries(id: string, ref: ClientRef | undefined): Promise<ClientManifestEntry[] | undefined> {
    if (!ref) return undefined;
    return (await this.manifests.get(`${id}/${ref.manifest}`))?.files;
  }

  /** A version's paths, read once while they fit what `owner` may keep. */
  private async index(
    id: string,
    ref: ClientRef,
    owner: string,
  ): Promise<Map<string, ClientManifestEntry> | undefined> {
    const key = `${id}/${ref.manifest}`;
    const cached = this.indexes.get(key);
    if (cached) return cached;
    const entries = await this.entries(id, ref);
    if (!entries) return undefined;
    const index = new Map(entries.map((entry) => [entry.path, entry]));
    this.indexes.keep(key, index, pathMapBytes(entries), owner);
    return index;
  }

  /** The bytes of the file stored under `key`, from memory when recently served. */
  private async bytes(key: string, owner: string): Promise<Buffer | undefined> {
    const cached = this.decoded.get(key);
    if (cached) return cached;
    let read = this.reading.get(key);
    if (!read) {
      const reading: Promise<Buffer | undefined> = this.read(key, owner).finally(() => {
        if (this.reading.get(key) === reading) this.reading.delete(key);
      });
      read = reading;
      this.reading.set(key, read);
    }
    return read;
  }

  /** Reads and decodes a file, and keeps it as `owner`'s (pushing out what no longer fits). */
  private async read(key: string, owner: string): Promise<Buffer | undefined> {
    const stored = await this.files.get(key);
    if (!stored) return undefined;
    const bytes = Buffer.from(stored.data, "base64");
    // Purged while it was read (the deployment deleted): served, not kept.
    if (!this.reading.has(key)) return bytes;
    this.decoded.keep(key, bytes, bytes.length, owner);
    return bytes;
  }
}
