import { randomBytes } from "node:crypto";
import type { CapsuleDeclaration } from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { newClaimToken } from "../auth/index.js";
import {
  type HostDatabase,
  type LockFence,
  type MigrationProgress,
  refusedForLostLock,
} from "../db/index.js";
import type { IsolatePool } from "../isolates/index.js";
import { bundleHash } from "./bundle-hash.js";
import type { ClientFileStore } from "./client-files.js";
import { type ClientFileInput, checkClientFiles } from "./client-input.js";
import { checkDeclaration } from "./declaration.js";
import { quarantine } from "./quarantine.js";
import { checkDeploymentId, type DeploymentRecord } from "./records.js";
import type { DeploymentRegistry } from "./registry.js";

/** What a deploy sends: a bundle and its server-only env (absent: keep the current values). */
export interface DeployInput {
  code: string;
  env?: Record<string, string>;
  /** The owning developer, when a new deployment is created by (or for) one. */
  owner?: string;
  /** The web client to serve at the deployment's origin (absent: keep the current one; `[]`: none). */
  client?: ClientFileInput[];
}

/**
 * Checked against the deployment as it is once the deploy holds the id's lock (undefined: none),
 * before anything is done; throws to refuse. A caller decided what it may do before its body
 * arrived, and the deployment may have been created, deleted or replaced since.
 */
export type DeployGuard = (previous: DeploymentRecord | undefined) => void;

/** A deploy's outcome; `claimToken` only when an unclaimed deployment was just created. */
export type DeployResult = DeploymentRecord & { claimToken?: string };

/**
 * Deploys `input` as deployment `id` (creating it or replacing its version): compiles the bundle
 * in a fresh isolate, reads and checks its declaration, stores the artifact and the web client,
 * migrates the schema, and only then switches the deployment (code and client in one record
 * write, stored in the batch that stores the schema, which tells the other hosts). Any failure
 * before the switch leaves the previous version serving, code and client; one after it is logged,
 * and the deploy answered as done (it is live). A new deployment without an owner is unclaimed;
 * its claim token is in the result, once. `fence` is the lifecycle lock's, held by the caller: the
 * switch lands only while it is held, since the new record is made from the one read under it.
 */
export async function deploy(
  parts: { registry: DeploymentRegistry; pool: IsolatePool; db: HostDatabase; clientFiles: ClientFileStore },
  id: string,
  input: DeployInput,
  onProgress?: (progress: MigrationProgress) => void,
  guard: DeployGuard = () => {},
  fence?: LockFence,
): Promise<DeployResult> {
  checkDeploymentId(id);
  if (typeof input?.code !== "string" || input.code.length === 0)
    throw new PlatformError("bad_request", "A deploy needs the bundle's code.");
  if (input.code.length > LIMITS.bundleBytes)
    throw new PlatformError("too_large", `The bundle is larger than ${LIMITS.bundleBytes} bytes.`);
  // Checked before any work: a client over its limits is refused without compiling anything.
  const client = input.client === undefined ? undefined : await checkClientFiles(input.client);
  const { registry, pool, db, clientFiles } = parts;
  const previous = await registry.get(id);
  guard(previous);
  // A redeploy without env keeps the deployment's current values; one with env replaces them.
  const env = input.env === undefined ? (previous?.env ?? {}) : checkEnv(input.env);
  const hash = await bundleHash(input.code);
  const owner = previous ? previous.owner : (input.owner ?? null);
  quarantine.checkDeploy(hash, id, owner);
  const probe = await pool.probe(id, owner, input.code, hash).catch((error: unknown) => {
    throw deployError(error);
  });
  let staged: Awaited<ReturnType<ClientFileStore["stage"]>> | undefined;
  let added = false;
  let switched = false;
  let adopted = false;
  let result: DeployResult | undefined;
  try {
    const declared = await probe.declare().catch((error: unknown) => Promise.reject(deployError(error)));
    let declaration: CapsuleDeclaration;
    try {
      declaration = checkDeclaration(declared);
    } catch (error) {
      throw deployError(error);
    }
    await registry.artifacts.add(
      {
        hash,
        code: input.code,
        apiVersion: declaration.apiVersion,
        size: input.code.length,
        createdAt: Date.now(),
      },
      id,
    );
    added = true;
    if (client) staged = await clientFiles.stage(id, client, previous?.client);
    const served = staged ? staged.ref : previous?.client;
    const database = await db.deployment(id);
    const now = Date.now();
    const claim = previous || input.owner ? undefined : newClaimToken();
    const record: DeploymentRecord = {
      owner,
      restricted: previous?.restricted ?? false,
      approved: previous?.approved ?? [],
      ...(previous?.claimTokenHash ? { claimTokenHash: previous.claimTokenHash } : {}),
      ...(claim ? { claimTokenHash: claim.hash } : {}),
      // A new deployment gets a fresh incarnation; a redeploy keeps it (and one created before
      // incarnations existed stays without, so its users' tokens keep working).
      ...(previous
        ? previous.incarnation === undefined
          ? {}
          : { incarnation: previous.incarnation }
        : { incarnation: randomBytes(16).toString("base64url") }),
      id,
      artifact: hash,
      declaration,
      env,
      ...(served ? { client: served } : {}),
      createdAt: previous?.createdAt ?? now,
      updatedAt: now,
    };
    result = claim ? Object.assign({}, record, { claimToken: claim.token }) : record;
    // The record is stored with the schema, and the code adopted at once: the old code never
    // serves the new schema, not even after a crash between the two. The batch tells the other
    // hosts of both.
    await database
      .migrate(declaration.schema, onProgress, {
        legacy: declaration.apiVersion === 0,
        switching: {
          operations: [
            ...registry.writesOf(record),
            ...registry.artifacts.switchWrites(id, hash, previous?.artifact),
          ],
          announce: [registry.announcementOf(id)],
          // The data is marked as this incarnation's: code of another is refused it.
          incarnation: record.incarnation,
          fence,
          switched: () => {
            registry.remember(record);
            switched = true;
            pool.runner(id, hash, owner).adopt(probe);
            adopted = true;
          },
        },
      })
      .catch((error: unknown) => Promise.reject(switched ? error : deployError(error)));
    registry.changedHere(id);
    // The replaced client's files, and any a crashed deploy left, go once nothing names them; if
    // that fails they stay, unserved, until the next deploy of the deployment or its deletion.
    await clientFiles.sweep(id, served, fence).catch(() => {});
    // The replaced bundle goes once no deployment uses it; if that fails, the hourly sweep removes it.
    // This deployment's own code cache of it goes at once: it serves another bundle now.
    if (previous && previous.artifact !== hash) {
      if (previous.incarnation !== undefined)
        pool.forgetCapsuleCache(previous.artifact, `${id}/${previous.incarnation}`);
      await registry.artifacts.release(previous.artifact).catch(() => {});
    }
    return result;
  } catch (error) {
    // Once switched, every host serves the new version (the switch's batch told them): answered
    // as failed, its developer would take what is live for the previous version.
    if (switched && result) {
      console.error(`Deployment ${id} switched to its new version; what followed failed:`, error);
      // This host's own listeners (live queries) hear of it all the same.
      registry.changedHere(id);
      if (!adopted) probe.dispose();
      return result;
    }
    probe.dispose();
    // A lock lost (the lifecycle lock: another host may have deployed since, and may serve what
    // this one staged; or the write lock): what it staged is left as a crash leaves it, for the
    // next deploy's sweep and the hourly one.
    if (refusedForLostLock(error)) throw error;
    if (staged) await clientFiles.discard(id, staged, previous?.client, fence).catch(() => {});
    if (added) await registry.artifacts.abandon(id, hash).catch(() => {});
    throw error;
  }
}

function checkEnv(env: unknown): Record<string, string> {
  if (typeof env !== "object" || env === null || Array.isArray(env))
    throw new PlatformError("bad_request", "env must be an object of strings.");
  const entries = Object.entries(env);
  if (entries.length > LIMITS.envValues)
    throw new PlatformError(
      "bad_request",
      `env has ${entries.length} values; at most ${LIMITS.envValues} are allowed. Keep fewer, or join related ones into one JSON value.`,
    );
  for (const [key, value] of entries) {
    if (typeof value !== "string")
      throw new PlatformError("bad_request", `env value ${key.slice(0, 64)} must be a string.`);
    if (key.length > LIMITS.envValueChars || value.length > LIMITS.envValueChars)
      throw new PlatformError(
        "bad_request",
        `env value ${key.slice(0, 64)} is longer than ${LIMITS.envValueChars} characters (its name or its value). Keep large data in a table or in storage.`,
      );
  }
  return env as Record<string, string>;
}

/**
 * Any failure of a deploy step as the deploy's error: `too_large` stays, the rest is `bad_request`,
 * but a switch refused because the lifecycle lock was lost, which is no fault of the bundle's: it
 * stays `unavailable` (retry), nothing of it written.
 */
function deployError(error: unknown): PlatformError {
  if (refusedForLostLock(error)) return error as PlatformError;
  if (isPlatformError(error)) {
    return new PlatformError(
      error.code === "too_large" ? "too_large" : "bad_request",
      `Deploy failed: ${error.message}`,
      { cause: error },
    );
  }
  return new PlatformError("bad_request", `Deploy failed: ${(error as Error)?.message ?? String(error)}`, {
    cause: error,
  });
}
