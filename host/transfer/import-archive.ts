import { setTimeout as sleep } from "node:timers/promises";
import { PlatformError } from "../../sdk/values/index.js";
import {
  bothFences,
  checkImportedSchema,
  deploymentHasRows,
  type HostDatabase,
  type LockFence,
  refusedForLostLock,
  type WriteLock,
} from "../db/index.js";
import {
  type DeploymentImport,
  type DeploymentRecord,
  type DeploymentService,
  storageQuotaOwner,
} from "../deployments/index.js";
import type { ArchivedObject, ObjectTransfer } from "../storage/index.js";
import { objectEntry } from "./archive-format.js";
import { ArchiveReader } from "./archive-reader.js";
import type { PendingImports } from "./pending-imports.js";
import { type ArchiveHead, readArchiveData, readArchiveHead, readArchiveObjects } from "./read-archive.js";

/** What an import needs of the host. */
export interface ImportParts {
  db: HostDatabase;
  deployments: DeploymentService;
  objects: ObjectTransfer;
  pending: PendingImports;
  /**
   * Held by one import at a time on the host, from before it takes its deployment's lock on other
   * hosts to its commit (it holds the lock in this process from before it waits for the turn): an import holds its rows, and then its whole batch, in memory (up to about 1.2 GiB at
   * the limits), and several developers importing at once would end the host.
   */
  rowTurns: WriteLock;
}

/** One import: the archive on disk, where it goes, and who asks. */
export interface ImportRequest {
  id: string;
  archive: string;
  /** Replace what the target holds; without it a target with rows or objects is refused. */
  replace: boolean;
  /** Import the archive's objects (when it has them); default true. */
  objects?: boolean;
  /**
   * The access rule, checked before the import holds anything of the deployment's and again under
   * its lock, on the record found there (undefined: the import creates it); returns the owner of a
   * deployment it creates (undefined: unclaimed).
   */
  authorise(existing: DeploymentRecord | undefined): Promise<string | undefined>;
}

/** A step of an import, for progress output. */
export type ImportProgress =
  | { step: "waiting" }
  | { step: "checking"; rows: number }
  | { step: "objects"; done: number; total: number }
  | { step: "committing" };

/** What an import did. */
export interface ImportResult {
  deployment: DeploymentRecord;
  /** Only when the import created an unclaimed deployment (shown once). */
  claimToken?: string;
  tables: Record<string, number>;
  objects: number;
  replaced: boolean;
}

/** How often an import waiting for its turn says so again (see {@link importArchive}). */
const WAITING_REPEAT_MS = 15_000;

/** How long an import whose deployment's lock another host held waits before it tries again. */
const LOCK_RETRY_MS = 250;

/**
 * Tells an import's client it waits, at once and again every {@link WAITING_REPEAT_MS}: a proxy
 * between the client and the host may end a connection that carries nothing for longer.
 */
class WaitingNotice {
  private repeat: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly onProgress: (progress: ImportProgress) => void) {}

  /** Says so now, unless it already does. */
  start(): void {
    if (this.repeat) return;
    this.onProgress({ step: "waiting" });
    this.repeat = setInterval(() => this.onProgress({ step: "waiting" }), WAITING_REPEAT_MS);
  }

  stop(): void {
    clearInterval(this.repeat);
    this.repeat = undefined;
  }
}

function notEmpty(id: string): PlatformError {
  return new PlatformError(
    "conflict",
    `Deployment ${id} is not empty (it has rows or stored objects); import with --replace to replace them, or into a new deployment.`,
  );
}

/**
 * A `--replace` kept stored objects with the archive's bytes as they were, and `gone` of them
 * were deleted before it committed: their records would name no bytes.
 */
function deletedMeanwhile(id: string, gone: string[]): PlatformError {
  const named = gone.length === 1 ? `Object ${gone[0]} was` : `${gone.length} objects (${gone[0]}, ...) were`;
  return new PlatformError(
    "conflict",
    `${named} deleted from ${id} while the import ran; nothing was imported. Retry the import to restore it with the archive's bytes.`,
  );
}

/**
 * Imports an export archive into deployment `request.id`, new or empty (or any, with `replace`),
 * all or nothing. Everything is read and checked first: the code is loaded as a deploy loads it,
 * the archive's schema must be exactly the one that code declares, every row must fit it and every
 * object pass the upload checks. Then the objects' bytes are staged (see {@link PendingImports}),
 * and rows, rebuilt index entries and counts, schema, clock, object records, quota usage and the
 * deployment record are written in ONE batch under the deployment's locks. A failure or a crash
 * before that batch leaves the target as it was; ids, `createdAt` values and object keys are kept.
 */
export async function importArchive(
  parts: ImportParts,
  request: ImportRequest,
  onProgress: (progress: ImportProgress) => void = () => {},
): Promise<ImportResult> {
  const reader = await ArchiveReader.open(request.archive);
  try {
    const head = await readArchiveHead(reader);
    // Refused before it holds anything of the deployment's (checked again under its lock): a
    // caller who may not import into it must not make its deploys wait behind this import.
    await request.authorise(await parts.deployments.get(request.id));
    // One import at a time on the host holds its rows and batch in memory (see ImportParts). It
    // takes its deployment's lock here first, queued with that deployment's deploys, and only then
    // waits for the host's turn, which it so never holds while a deploy of its deployment (a long
    // migration) runs here; another host's it does not wait for in the turn either: it gives the
    // turn up and tries again.
    const waiting = new WaitingNotice(onProgress);
    try {
      for (;;) {
        if (!parts.rowTurns.idle || parts.deployments.lifecycleBusy(request.id)) waiting.start();
        const attempt = await parts.deployments.whileLockedForImport<ImportResult>(
          request.id,
          // Checked again now that it holds the deployment's lock here, before it waits for the
          // turn with it: the deployment may have been created by another developer meanwhile.
          async (inTurn) => {
            await request.authorise(await parts.deployments.get(request.id));
            return parts.rowTurns.run(inTurn);
          },
          async (fence) => {
            waiting.stop();
            await parts.pending.finish(request.id, fence);
            const existing = await parts.deployments.get(request.id);
            const owner = await request.authorise(existing);
            if (existing && !request.replace && (await holdsData(parts, request.id)))
              throw notEmpty(request.id);
            const target = parts.deployments.importInto(request.id);
            try {
              return await load(parts, request, { head, reader, target, owner, fence }, onProgress);
            } catch (error) {
              // Its lock lost, another host may be importing or deploying now: what this one
              // staged is left as a crash leaves it, for the next import of the id or the next
              // start to finish, and its bundle for the hourly sweep.
              if (refusedForLostLock(error)) throw error;
              await target.dispose();
              await parts.pending.finish(request.id, fence).catch(() => {});
              throw error;
            }
          },
        );
        if (attempt.ran) return attempt.value;
        waiting.start();
        await sleep(LOCK_RETRY_MS);
      }
    } finally {
      waiting.stop();
    }
  } finally {
    reader.close();
  }
}

/** Whether deployment `id` has rows or stored objects now. */
async function holdsData(parts: ImportParts, id: string): Promise<boolean> {
  return (await parts.objects.recordsNow(id)).length > 0 || (await deploymentHasRows(parts.db.store, id));
}

/**
 * An import's load and commit, holding its deployment's lifecycle lock (whose `fence` its commit
 * passes: the record it writes is made from the one read under that lock).
 */
async function load(
  parts: ImportParts,
  request: ImportRequest,
  into: {
    head: ArchiveHead;
    reader: ArchiveReader;
    target: DeploymentImport;
    owner: string | undefined;
    fence: LockFence | undefined;
  },
  onProgress: (progress: ImportProgress) => void,
): Promise<ImportResult> {
  const { id } = request;
  const { head, reader, target, owner, fence } = into;
  const code = await target.load(head.code, owner);
  const schema = checkImportedSchema(head.schema, code.declaration.schema, code.declaration.apiVersion === 0);
  const data = await readArchiveData(reader, head, schema, (rows) => onProgress({ step: "checking", rows }));
  const { record, writes, claimToken } = await target.record(code, head.settings, owner);
  const quotaOwner = storageQuotaOwner(record);
  const fits = async (objects: ArchivedObject[]) =>
    parts.objects.checkFitsBeforeStaging(quotaOwner, await parts.objects.recordsNow(id), objects);
  const incoming =
    (await readArchiveObjects(reader, head, schema, parts.objects, request.objects ?? true, fits)) ?? [];
  const kept = await stageObjects(parts, { id, fence }, reader, incoming, onProgress);
  onProgress({ step: "committing" });
  const replaced = await parts.objects.underQuotaLocks(id, quotaOwner, async (existing, quotaFence) => {
    if (existing.length > 0 && !request.replace) throw notEmpty(id);
    const gone = await parts.objects.keptObjectsGone(id, kept, existing);
    if (gone.length > 0) throw deletedMeanwhile(id, gone);
    const objectWrites = await parts.objects.replacement(id, quotaOwner, existing, incoming);
    const replacedBlobs = existing.map((object) => `${id}/${object.key}`);
    const database = await parts.db.deployment(id);
    await database.replaceData(
      data,
      async (hasRows) => {
        if (hasRows && !request.replace) throw notEmpty(id);
        return [...objectWrites, ...writes, parts.pending.commitWrite(id, replacedBlobs)];
      },
      // Made under the lifecycle lock (the record) and the quota locks (the usage it moves).
      {
        announce: [target.announcement],
        incarnation: record.incarnation,
        fence: bothFences(fence, quotaFence),
      },
    );
    return existing.length > 0;
  });
  await target.switched(record);
  await parts.pending.finish(id, fence).catch(() => {});
  return {
    deployment: record,
    ...(claimToken ? { claimToken } : {}),
    tables: Object.fromEntries([...data.tables].map(([table, rows]) => [table, rows.length])),
    objects: incoming.length,
    replaced: replaced || request.replace,
  };
}

/**
 * Writes the objects' bytes, after a marker naming all of them (see {@link PendingImports});
 * returns the keys of stored objects with the same bytes, kept as they are (a `--replace`).
 */
async function stageObjects(
  parts: ImportParts,
  { id, fence }: { id: string; fence: LockFence | undefined },
  reader: ArchiveReader,
  incoming: ArchivedObject[],
  onProgress: (progress: ImportProgress) => void,
): Promise<string[]> {
  if (incoming.length === 0) return [];
  await parts.pending.begin(
    id,
    incoming.map((object) => `${id}/${object.key}`),
    fence,
  );
  const kept: string[] = [];
  let done = 0;
  for (const object of incoming) {
    const bytes = await reader.read(objectEntry(object.key), object.size);
    if (!(await parts.objects.stage(id, object.key, bytes))) kept.push(object.key);
    if (++done % 100 === 0 || done === incoming.length)
      onProgress({ step: "objects", done, total: incoming.length });
  }
  return kept;
}
