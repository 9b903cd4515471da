import { PlatformError } from "../../sdk/values/index.js";
import type { HostDatabase, KvOperation, LockFence, RecordStore } from "../db/index.js";
import type { ObjectTransfer } from "../storage/index.js";

/** The marker of an import of deployment `id` in progress: blobs to remove unless a record names them. */
interface PendingImport {
  id: string;
  /** Blob keys (`<deployment>/<public|private>/<id>`). */
  blobs: string[];
  startedAt: number;
}

/**
 * Object bytes an import writes outside the database's one batch, kept track of so that a crash
 * never leaves them behind. Before the first byte is staged, a marker names every blob the import
 * may write; the import's batch replaces it with the blobs of the objects it replaced; afterwards
 * the named blobs that no record refers to are removed and the marker goes. A host finishes every
 * marker left by a crash when it starts (and an import of the same id first), so staged bytes of
 * an import that never committed are neither served, counted, nor kept.
 */
export class PendingImports {
  private readonly markers: RecordStore<PendingImport>;

  constructor(
    db: HostDatabase,
    private readonly objects: ObjectTransfer,
  ) {
    this.markers = db.records<PendingImport>("deployment-imports");
  }

  /**
   * Records that an import of `id` may write `blobs` (call before writing any), under `id`'s
   * lifecycle lock, whose `fence` the marker's writes pass (here and in {@link finish}).
   */
  begin(id: string, blobs: string[], fence?: LockFence): Promise<void> {
    return this.markers.put(id, { id, blobs, startedAt: Date.now() }, fence);
  }

  /** The write, for the import's batch, that leaves `replaced` (blobs of replaced objects) to remove afterwards. */
  commitWrite(id: string, replaced: string[]): KvOperation {
    return {
      type: "put",
      key: this.markers.key(id),
      value: JSON.stringify({ id, blobs: replaced, startedAt: Date.now() } satisfies PendingImport),
    };
  }

  /**
   * Removes the marked blobs of `id` that no record names, then the marker (idempotent). When some
   * cannot be removed now (the blob store unreachable), the marker keeps naming them, for the next
   * start or import of `id` to try again, and this fails: bytes nothing counts are never forgotten.
   * The marker is written back first with `fence`: read under a lock lost already, it may be
   * another host's import's, whose staged bytes no record names yet (bytes have no fence).
   */
  async finish(id: string, fence?: LockFence): Promise<void> {
    const marker = await this.markers.get(id);
    if (!marker) return;
    if (fence) await this.markers.put(id, marker, fence);
    const failed = await this.objects.sweep(marker.blobs);
    if (failed.length === 0) {
      await this.markers.delete(id, fence);
      return;
    }
    await this.markers.put(id, { id, blobs: failed, startedAt: marker.startedAt }, fence);
    throw new PlatformError(
      "unavailable",
      `${failed.length} staged or replaced files of ${id} could not be removed from storage; they are removed when the host starts again or ${id} is imported again.`,
    );
  }

  /** Ids of every import a crash left unfinished. */
  async unfinished(): Promise<string[]> {
    return (await this.markers.list()).map((marker) => marker.id);
  }
}
