import type { BlobStore } from "./blob-store.js";

/** One host backup's hold on removals of object bytes (see {@link BlobDeletions.hold}). */
export interface BlobHold {
  /** The backup's snapshot is taken: bytes written from now on are named by no record in it. */
  snapshotTaken(): void;
  /**
   * Ends the hold (once; later calls do nothing). Resolves when the removals held meanwhile are
   * done, or failed: those stay as unreferenced bytes, as after a crash.
   */
  release(): Promise<void>;
}

/**
 * Every removal of object bytes goes through here, so a host backup can hold them: while a hold
 * is open, deleted keys are only noted, and when the last hold is released each is removed unless
 * a record names its key again by then. A backup's snapshot may still hold the record of an object
 * deleted after it was taken; holding the bytes until the backup has copied them keeps every
 * record of the backup with its bytes. Bytes written after every open hold's snapshot are in no
 * backup, and are removed at once: an upload-and-delete loop during a long backup would otherwise
 * fill the disk while the quota shows nothing. Held keys die with the process: after a crash they
 * are unreferenced bytes, never counted (as a crash between a record's delete and its bytes' leaves).
 */
export class BlobDeletions {
  private holds = 0;
  /** Holds whose snapshot is not taken yet: until then, any bytes written may be in it. */
  private snapshotsPending = 0;
  private readonly deferred = new Set<string>();
  /** Keys written after every open hold's snapshot (see {@link written}). */
  private readonly fresh = new Set<string>();

  constructor(
    private readonly blobs: BlobStore,
    /** Whether a record names blob key `key` now (then its bytes must stay). */
    private readonly isReferenced: (key: string) => Promise<boolean>,
  ) {}

  /** Notes that bytes were just written under `key` (an upload, an import's staging). */
  written(key: string): void {
    // Bytes written again under a key whose removal is held (an import restaging it) may be the
    // ones a snapshot names: they stay held.
    if (this.holds > 0 && this.snapshotsPending === 0 && !this.deferred.has(key)) this.fresh.add(key);
  }

  /** Removes the bytes under `key` now, or once every hold is released. */
  async delete(key: string): Promise<void> {
    if (this.holds > 0 && (!this.fresh.has(key) || this.deferred.has(key))) this.deferred.add(key);
    else {
      this.fresh.delete(key);
      await this.blobs.delete(key);
    }
  }

  /** Whether the removal of the bytes under `key` waits for a backup (they may be the ones its snapshot names). */
  isHeld(key: string): boolean {
    return this.deferred.has(key);
  }

  /** Keys whose removal waits for the holds to end (tests and reports). */
  get waiting(): number {
    return this.deferred.size;
  }

  /** Holds every removal of bytes a snapshot taken from now on may name, until released. */
  hold(): BlobHold {
    this.holds++;
    this.snapshotsPending++;
    // The new snapshot may name any bytes written so far.
    this.fresh.clear();
    let taken = false;
    let released = false;
    const snapshotTaken = () => {
      if (taken) return;
      taken = true;
      this.snapshotsPending--;
    };
    return {
      snapshotTaken,
      release: async () => {
        if (released) return;
        released = true;
        snapshotTaken();
        this.holds--;
        if (this.holds > 0) return;
        this.fresh.clear();
        const keys = [...this.deferred];
        this.deferred.clear();
        for (const key of keys) {
          if (this.holds > 0) {
            this.deferred.add(key);
            continue;
          }
          if (!(await this.isReferenced(key).catch(() => true))) await this.blobs.delete(key).catch(() => {});
        }
      },
    };
  }
}
