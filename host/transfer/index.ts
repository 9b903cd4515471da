/**
 * `host/transfer`: export and import of one deployment (docs/operators.md "Export and import"). An
 * export streams one snapshot of a deployment as a zip archive (archive-format.ts); an import
 * checks a whole archive, then writes it in one batch, all or nothing.
 */
import { type HostDatabase, WriteLock } from "../db/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { type ObjectService, ObjectTransfer } from "../storage/index.js";
import { type ExportOptions, startExport } from "./export-archive.js";
import {
  type ImportProgress,
  type ImportRequest,
  type ImportResult,
  importArchive,
} from "./import-archive.js";
import { PendingImports } from "./pending-imports.js";
import { TransferTurns } from "./transfer-turns.js";
import { UploadFolder } from "./upload-folder.js";
import { type WrittenExport, writeExport } from "./written-export.js";

export type { ArchiveManifest } from "./archive-format.js";
export type { ImportProgress, ImportRequest, ImportResult, WrittenExport };
export { UploadFolder };

/** Export and import of deployments on one host. */
export class DeploymentTransfer {
  private readonly objects: ObjectTransfer;
  private readonly pending: PendingImports;
  private readonly rowTurns = new WriteLock();
  private readonly turns = new TransferTurns(
    "You are already importing an archive on this host, and a developer imports one at a time; retry once that import has finished.",
  );
  private readonly exportTurns = new TransferTurns(
    "You are already exporting a deployment on this host, and a developer exports one at a time; retry once that export has been read.",
  );

  constructor(
    private readonly db: HostDatabase,
    private readonly deployments: DeploymentService,
    objects: ObjectService,
    /** Where received archives wait for their import (see {@link UploadFolder}). */
    readonly uploads: UploadFolder,
  ) {
    this.objects = new ObjectTransfer(db, objects);
    this.pending = new PendingImports(db, this.objects);
  }

  /**
   * Writes the archive of deployment `id` (objects too when `objects`) to the host's disk, as
   * `developer`'s one export on this host until its file is discarded (see {@link TransferTurns}
   * and {@link writeExport}); `signal`: its client left.
   */
  async export(
    id: string,
    options: ExportOptions,
    developer: string | undefined,
    signal: AbortSignal,
  ): Promise<WrittenExport> {
    const release = this.exportTurns.take(developer);
    const parts = { db: this.db, deployments: this.deployments, objects: this.objects };
    return writeExport(this.uploads, () => startExport(parts, id, options), signal, release);
  }

  /** Imports an archive on disk (see {@link importArchive}). */
  import(request: ImportRequest, onProgress?: (progress: ImportProgress) => void): Promise<ImportResult> {
    return importArchive(
      {
        db: this.db,
        deployments: this.deployments,
        objects: this.objects,
        pending: this.pending,
        rowTurns: this.rowTurns,
      },
      request,
      onProgress,
    );
  }

  /**
   * Runs `work` (receiving an archive, then importing it) as `developer`'s one import on this
   * host, refused at once while another of theirs runs (see {@link TransferTurns}).
   */
  importTurn<T>(developer: string | undefined, work: () => Promise<T>): Promise<T> {
    return this.turns.run(developer, work);
  }

  /**
   * Cleans up after imports a crash interrupted (their staged bytes, and archives received by a
   * process no longer running); the host calls it when it starts. One that fails now stays marked
   * for the next start or the next import of its id.
   */
  async finishUnfinished(onFailure: (id: string, error: unknown) => void): Promise<void> {
    await this.uploads.removeLeftovers();
    for (const id of await this.pending.unfinished())
      await this.deployments
        .whileLocked(id, (fence) => this.pending.finish(id, fence))
        .catch((error: unknown) => onFailure(id, error));
  }
}
