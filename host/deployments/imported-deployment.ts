import { randomBytes } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { newClaimToken } from "../auth/index.js";
import type { HostMessage, KvOperation } from "../db/index.js";
import type { IsolatePool } from "../isolates/index.js";
import { bundleHash } from "./bundle-hash.js";
import { checkDeclaration } from "./declaration.js";
import { quarantine } from "./quarantine.js";
import { checkDeploymentId, type DeploymentRecord } from "./records.js";
import type { DeploymentRegistry } from "./registry.js";

/** The code an import installs, compiled and declared, not live yet. */
export interface LoadedCode {
  hash: string;
  declaration: DeploymentRecord["declaration"];
}

/** The access settings an archive carries (never env values, owner or claim token). */
export interface ImportedSettings {
  restricted: boolean;
  approved: string[];
}

/**
 * An import's part in the deployment records (host/transfer runs the import): loading the
 * archive's code as a deploy does, and the deployment record that commits in the same batch as
 * the data. A new deployment takes the archive's access settings; an existing one keeps its own,
 * with its owner, env and incarnation. Only the code changes.
 */
export class DeploymentImport {
  private probe: Awaited<ReturnType<IsolatePool["probe"]>> | undefined;
  /** The artifact {@link load} stored (its use pending until the import commits). */
  private added: string | undefined;
  /** The artifact the deployment served before, to release once the import committed. */
  private before: string | undefined;

  constructor(
    private readonly registry: DeploymentRegistry,
    private readonly pool: IsolatePool,
    readonly id: string,
  ) {
    checkDeploymentId(id);
  }

  /**
   * Compiles `code` in a fresh isolate, reads and checks its declaration, and stores the artifact.
   * `importer` is the developer importing (undefined: the operator).
   */
  async load(code: string, importer: string | undefined): Promise<LoadedCode> {
    if (code.length === 0 || code.length > LIMITS.bundleBytes)
      throw new PlatformError(
        "bad_request",
        "Invalid archive: code.js is empty or larger than a bundle may be.",
      );
    const hash = await bundleHash(code);
    const owner = importer ?? (await this.registry.get(this.id))?.owner ?? null;
    quarantine.checkDeploy(hash, this.id, owner);
    this.probe = await this.pool.probe(this.id, owner, code, hash).catch((error: unknown) => {
      throw importError(error);
    });
    let declaration: LoadedCode["declaration"];
    try {
      declaration = checkDeclaration(await this.probe.declare());
    } catch (error) {
      throw importError(error);
    }
    await this.registry.artifacts.add(
      { hash, code, apiVersion: declaration.apiVersion, size: code.length, createdAt: Date.now() },
      this.id,
    );
    this.added = hash;
    return { hash, declaration };
  }

  /** What tells the other hosts of the new record: sent with the import's batch. */
  get announcement(): HostMessage {
    return this.registry.announcementOf(this.id);
  }

  /**
   * The record deployment `id` will have once the import commits, and the writes that store it
   * (and its use of the artifact); `claimToken` when an unclaimed deployment is created (shown
   * once, as a deploy shows it).
   */
  async record(
    code: LoadedCode,
    settings: ImportedSettings,
    owner: string | undefined,
  ): Promise<{ record: DeploymentRecord; writes: KvOperation[]; claimToken?: string }> {
    const previous = await this.registry.reload(this.id);
    this.before = previous?.artifact;
    const now = Date.now();
    const claim = previous || owner ? undefined : newClaimToken();
    const record: DeploymentRecord = previous
      ? Object.assign({}, previous, { artifact: code.hash, declaration: code.declaration, updatedAt: now })
      : {
          id: this.id,
          artifact: code.hash,
          declaration: code.declaration,
          env: {},
          incarnation: randomBytes(16).toString("base64url"),
          owner: owner ?? null,
          ...(claim ? { claimTokenHash: claim.hash } : {}),
          restricted: settings.restricted,
          approved: settings.approved,
          createdAt: now,
          updatedAt: now,
        };
    const writes = [
      ...this.registry.writesOf(record),
      ...this.registry.artifacts.switchWrites(this.id, code.hash, previous?.artifact),
    ];
    return { record, writes, ...(claim ? { claimToken: claim.token } : {}) };
  }

  /** After the commit (which told the other hosts): the runner serves the new code, and this host's listeners hear of it. */
  async switched(record: DeploymentRecord): Promise<void> {
    this.registry.remember(record);
    if (this.probe) this.pool.runner(this.id, record.artifact, record.owner).adopt(this.probe);
    this.probe = undefined;
    this.added = undefined;
    this.registry.changedHere(this.id);
    // The replaced bundle goes once no deployment uses it (else the hourly sweep removes it).
    if (this.before !== undefined && this.before !== record.artifact)
      await this.registry.artifacts.release(this.before).catch(() => {});
  }

  /** Drops the loaded isolate and the artifact's pending use (the import failed or was refused). */
  async dispose(): Promise<void> {
    this.probe?.dispose();
    this.probe = undefined;
    const added = this.added;
    this.added = undefined;
    if (added !== undefined) await this.registry.artifacts.abandon(this.id, added).catch(() => {});
  }
}

function importError(error: unknown): PlatformError {
  const message = isPlatformError(error) ? error.message : ((error as Error)?.message ?? String(error));
  return new PlatformError("bad_request", `Invalid archive: its code does not load: ${message}`, {
    cause: error,
  });
}
