import { PlatformError } from "../../sdk/values/index.js";
import type { HostDatabase, KvOperation, LockFence, RecordStore } from "../db/index.js";
import type { ArtifactRecord, DeploymentRecord } from "./records.js";

/**
 * Artifact code kept in memory at most (characters). Artifacts never change (their key is their
 * content hash), so the code of a recently started one is kept: a cold start then skips reading
 * and parsing a record of up to a bundle's size.
 */
const KEPT_CODE_CHARS = 32 * 1024 * 1024;

/** The flag saying every record of the database has its artifact use (see {@link ArtifactStore.adoptRecords}). */
const ADOPTED = "artifact-uses-adopted";

/** The lock, across hosts, under which artifacts are added and removed. */
const ARTIFACT_LOCK = "artifacts";

/**
 * A pending use this old is a deploy or import a crash ended: it no longer keeps its artifact.
 * A deploy or import taking longer would lose its code (none comes near).
 */
const PENDING_USE_MS = 24 * 60 * 60 * 1000;

/**
 * Deployment `<deployment>`'s use of artifact `<hash>` (record id `<hash>/<deployment>`): serving
 * it (its record names it), or pending (a deploy or import of it under way since `since`).
 */
interface ArtifactUse {
  pending: boolean;
  since: number;
}

function artifactUseId(hash: string, deployment: string): string {
  return `${hash}/${deployment}`;
}

/** The artifact and deployment of use `id` (a deployment id holds no `/`). */
function splitUseId(id: string): { hash: string; deployment: string } {
  const cut = id.lastIndexOf("/");
  return { hash: id.slice(0, cut), deployment: id.slice(cut + 1) };
}

/** Which artifact each deployment's record names, as the store holds them now. */
export interface NamedArtifacts {
  /** Every deployment's id and artifact. */
  all(): Promise<Array<{ id: string; artifact: string }>>;
  /** The artifact deployment `id`'s record names; undefined when there is no such record. */
  one(id: string): Promise<string | undefined>;
}

/**
 * `read` (each deployment's artifact, read before uses were read under the lock) as the sweep may
 * act on it: every deployment whose uses disagree with it (no use of the artifact read, or a
 * serving use of another) is read again from `records`. The rest need no second read: a deploy,
 * import or deletion writes a record and its uses in one batch, and a deploy's artifact has its
 * pending use before (added under the lock), so a record read before that agrees with the uses
 * still names what they keep; at worst a record read before its deletion keeps its artifact
 * until the next sweep.
 */
async function confirmed(
  read: Map<string, string>,
  uses: Array<[string, ArtifactUse]>,
  records: NamedArtifacts,
): Promise<Map<string, string>> {
  const has = new Set(uses.map(([id]) => id));
  const doubtful = new Set<string>();
  for (const [deployment, hash] of read)
    if (!has.has(artifactUseId(hash, deployment))) doubtful.add(deployment);
  for (const [id, use] of uses) {
    const { hash, deployment } = splitUseId(id);
    if (!use.pending && read.get(deployment) !== hash) doubtful.add(deployment);
  }
  const named = new Map(read);
  for (const deployment of doubtful) {
    const artifact = await records.one(deployment);
    if (artifact === undefined) named.delete(deployment);
    else named.set(deployment, artifact);
  }
  return named;
}

/**
 * Bundles stored by content hash, each kept while some deployment uses it and removed once none
 * does: every deploy stores a bundle of up to 16 MB, and a developer may deploy in a loop. A use is
 * written when a deploy or import stores the artifact (pending), becomes serving in the batch that
 * stores the record naming it, and goes in the batch that names another or removes the record.
 * Adding and removing happen under one lock across hosts, so an artifact is never removed between
 * a deploy finding it stored and its record naming it.
 */
export class ArtifactStore {
  private readonly artifacts: RecordStore<ArtifactRecord>;
  private readonly uses: RecordStore<ArtifactUse>;
  /** Recently used artifacts' code by hash, least recently used first. */
  private readonly codes = new Map<string, string>();
  private codeChars = 0;

  /** Told of each artifact removed (the host forgets its code caches). */
  onRemoved: (hash: string) => void = () => {};

  constructor(private readonly db: HostDatabase) {
    this.artifacts = db.records<ArtifactRecord>("artifacts");
    this.uses = db.records<ArtifactUse>("artifact-uses");
  }

  /** The code of artifact `hash`; `internal` when it is missing (a record names only stored ones). */
  async code(hash: string): Promise<string> {
    const kept = this.codes.get(hash);
    if (kept !== undefined) {
      this.keepCode(hash, kept);
      return kept;
    }
    const artifact = await this.artifacts.get(hash);
    if (!artifact) throw new PlatformError("internal", `Artifact ${hash} is missing.`);
    this.keepCode(hash, artifact.code);
    return artifact.code;
  }

  /**
   * Stores `artifact` unless it is stored (artifacts are immutable), with deployment `deployment`'s
   * pending use of it, unless it serves it already: kept until the deploy's record names it, or
   * {@link abandon} ends the use.
   */
  async add(artifact: ArtifactRecord, deployment: string): Promise<void> {
    // Written before the lock (one lock of every host: a 16 MiB bundle written under it held other
    // developers' deploys 0.4 s each); stored by its hash, so a second write is harmless, and only
    // a removal under the lock can take it, which the check under the lock undoes.
    if (!(await this.artifacts.has(artifact.hash))) await this.artifacts.put(artifact.hash, artifact);
    await this.db.exclusive(ARTIFACT_LOCK, async (fence) => {
      if (!(await this.artifacts.has(artifact.hash)))
        await this.artifacts.put(artifact.hash, artifact, fence);
      const id = artifactUseId(artifact.hash, deployment);
      const use = await this.uses.get(id);
      if (!use || use.pending) await this.uses.put(id, { pending: true, since: Date.now() }, fence);
    });
    this.keepCode(artifact.hash, artifact.code);
  }

  /**
   * The writes, for the batch storing deployment `deployment`'s record naming `hash` in place of
   * `before` (undefined: a new deployment), that make the first use serving and end the second.
   */
  switchWrites(deployment: string, hash: string, before: string | undefined): KvOperation[] {
    const serving: ArtifactUse = { pending: false, since: Date.now() };
    const writes: KvOperation[] = [
      { type: "put", key: this.uses.key(artifactUseId(hash, deployment)), value: JSON.stringify(serving) },
    ];
    if (before !== undefined && before !== hash)
      writes.push({ type: "del", key: this.uses.key(artifactUseId(before, deployment)) });
    return writes;
  }

  /** The write, for the batch removing deployment `deployment`'s record (naming `hash`), that ends its use. */
  endWrite(deployment: string, hash: string): KvOperation {
    return { type: "del", key: this.uses.key(artifactUseId(hash, deployment)) };
  }

  /** Ends deployment `deployment`'s pending use of `hash` (its deploy or import failed), and removes it if unused. */
  async abandon(deployment: string, hash: string): Promise<void> {
    await this.db.exclusive(ARTIFACT_LOCK, async (fence) => {
      const id = artifactUseId(hash, deployment);
      if ((await this.uses.get(id))?.pending) await this.uses.delete(id, fence);
      await this.removeUnused(hash, fence);
    });
  }

  /** Removes artifact `hash` if no deployment uses it (the one it served was replaced or deleted). */
  async release(hash: string): Promise<void> {
    await this.db.exclusive(ARTIFACT_LOCK, (fence) => this.removeUnused(hash, fence));
  }

  /** Under the artifact lock, whose `fence` the removal passes: a use added meanwhile keeps it. */
  private async removeUnused(hash: string, fence: LockFence | undefined): Promise<void> {
    if (await this.uses.someInPrefix(`${hash}/`, () => true)) return;
    await this.artifacts.delete(hash, fence);
    this.forgetCode(hash);
    this.onRemoved(hash);
  }

  /**
   * Once per database, under the lock: gives every record of `records` (read under it) its serving
   * use, which versions before uses were kept never wrote. Until then a deploy replacing one
   * deployment's bundle would remove it from another serving the same bundle.
   */
  async adoptRecords(records: NamedArtifacts): Promise<void> {
    // Beside the host's other once-per-database flags (account-index.ts).
    const flags = this.db.records<{ at: number }>("host-flags");
    if (await flags.has(ADOPTED)) return;
    await this.db.exclusive(ARTIFACT_LOCK, async (fence) => {
      if (await flags.has(ADOPTED)) return;
      const now = Date.now();
      const writes = (await records.all()).map((record) => ({
        id: artifactUseId(record.artifact, record.id),
        value: { pending: false, since: now },
      }));
      for (let at = 0; at < writes.length; at += 500)
        await this.uses.batch(writes.slice(at, at + 500), [], fence);
      await flags.put(ADOPTED, { at: now }, fence);
    });
  }

  /**
   * Makes uses match the deployments' records: each record's artifact gets a serving use (records
   * stored before uses were kept), serving uses no record names go, and so do pending ones a crash
   * left; then every artifact without a use is removed. Returns how many were. A host runs it a few
   * minutes after it starts, then hourly.
   *
   * Every record is read before the lock (a record holds its declaration and env, up to megabytes:
   * 100 large ones parsed under it held every host's deploys 2.7 s); under it only the uses are
   * read, and the records of deployments whose uses disagree with what was read, read again: a
   * deploy, import or deletion meanwhile changes a record and its uses in one batch, so a record
   * read before the lock decides nothing that its uses do not confirm.
   */
  async sweep(records: NamedArtifacts): Promise<number> {
    const read = new Map((await records.all()).map((record) => [record.id, record.artifact]));
    return this.db.exclusive(ARTIFACT_LOCK, async (fence) => {
      // Uses first: a record switched meanwhile shows its new artifact's use, pending or serving.
      const uses: Array<[string, ArtifactUse]> = [];
      for await (const page of this.uses.entryPages()) uses.push(...page);
      const named = await confirmed(read, uses, records);
      const now = Date.now();
      const has = new Set(uses.map(([id]) => id));
      const writes: Array<{ id: string; value: ArtifactUse | null }> = [];
      for (const [deployment, hash] of named)
        if (!has.has(artifactUseId(hash, deployment)))
          writes.push({ id: artifactUseId(hash, deployment), value: { pending: false, since: now } });
      const used = new Set(named.values());
      for (const [id, use] of uses) {
        const { hash, deployment } = splitUseId(id);
        const stale = use.pending ? now - use.since > PENDING_USE_MS : named.get(deployment) !== hash;
        if (stale) writes.push({ id, value: null });
        else used.add(hash);
      }
      if (writes.length > 0) await this.uses.batch(writes, [], fence);
      let removed = 0;
      for await (const page of this.artifacts.idPages())
        for (const hash of page)
          if (!used.has(hash)) {
            await this.artifacts.delete(hash, fence);
            this.forgetCode(hash);
            this.onRemoved(hash);
            removed++;
          }
      return removed;
    });
  }

  /** Keeps `code` as the most recently used, forgetting the least recently used beyond the budget. */
  private keepCode(hash: string, code: string): void {
    this.forgetCode(hash);
    this.codes.set(hash, code);
    this.codeChars += code.length;
    for (const [oldest, text] of this.codes) {
      if (this.codeChars <= KEPT_CODE_CHARS) break;
      this.codes.delete(oldest);
      this.codeChars -= text.length;
    }
  }

  private forgetCode(hash: string): void {
    const previous = this.codes.get(hash);
    if (previous === undefined) return;
    this.codeChars -= previous.length;
    this.codes.delete(hash);
  }
}

/** Deployment records parsed per read of {@link storedArtifacts}. */
const STORED_PAGE = 8;

/**
 * Which artifact each deployment's record names as `records` (the deployments' records) store them
 * now, not as a host's cache holds them (a cached record may name an artifact no longer served).
 * Every record is read a few per read, and only the pair is kept (whole records held 400 MiB for a
 * developer's 100 deployments during the hourly sweep).
 */
export function storedArtifacts(records: RecordStore<DeploymentRecord>): NamedArtifacts {
  return {
    async all() {
      const found: Array<{ id: string; artifact: string }> = [];
      for await (const page of records.entryPages(STORED_PAGE))
        for (const [, record] of page) found.push({ id: record.id, artifact: record.artifact });
      return found;
    },
    one: async (id) => (await records.get(id))?.artifact,
  };
}
