/**
 * Which incarnation of a deployment its stored data belongs to. A deployment deleted and created
 * again under its id (by anyone) is another app with the same keys; a host that has not heard of
 * it yet (its announcement lost or still on its way, the records' check not come yet) still holds
 * the old record and runs the old code's isolate. The data says whose it is: a deploy and an
 * import store the record's incarnation under the deployment's meta prefix with the schema (a
 * deletion clears it with the rest), and every call names the incarnation its code belongs to. A
 * mutation is refused under the write lock, which every change of the stored incarnation takes; a
 * query before its snapshot answers it anything. Before, the old code on such a host read the new
 * deployment's rows and wrote into them (an attack review; test/stale-incarnation.test.ts).
 */
import { PlatformError } from "../../sdk/values/index.js";
import { NOT_READY, type NotReady } from "./fast-path.js";
import { metaKey } from "./keys.js";
import type { KeptScan, KvIterateOptions, KvIterator, KvOperation, KvSnapshot } from "./kv/index.js";

/** The key of the incarnation deployment `id`'s data belongs to. */
export function incarnationKey(id: string): Buffer {
  return metaKey(id, "incarnation");
}

/**
 * The writes that mark deployment `id`'s data as `incarnation`'s, for the batch that stores its
 * schema (a deploy) or replaces its data (an import); none for a deployment created before
 * incarnations existed (null), whose data stays unmarked.
 */
export function incarnationWrites(id: string, incarnation: string | null | undefined): KvOperation[] {
  return typeof incarnation === "string"
    ? [{ type: "put", key: incarnationKey(id), value: incarnation }]
    : [];
}

/**
 * Whether data marked `stored` may serve code of incarnation `expected` (undefined: the host's own
 * work, which names none). Unmarked data (a deployment not deployed since incarnations were stored,
 * or one deleted and not created again) serves any.
 */
export function servesIncarnation(stored: string | undefined, expected: string | null | undefined): boolean {
  return expected === undefined || stored === undefined || stored === expected;
}

/** The refusal of a call whose code belongs to an incarnation of deployment `id` that was deleted. */
export function replacedError(id: string): PlatformError {
  return new PlatformError("not_found", `Deployment ${id} was deleted.`);
}

/**
 * A query's snapshot that answers nothing before it has read the deployment's incarnation in the
 * same view: a read of another incarnation's data fails with `not_found` (and `refused` runs)
 * before any of it reaches the handler. The incarnation is read with the handler's first read (one
 * message on PostgreSQL, a point read kept for the view like any), or at once where the store
 * answers at once; a handler that reads nothing reads no incarnation either.
 */
export class IncarnationSnapshot implements KvSnapshot {
  /** Set once the incarnation was read and found to be another's. */
  failure: PlatformError | undefined;
  private confirmed = false;
  /** The read of the incarnation, once under way. */
  private reading: Promise<void> | undefined;

  constructor(
    private readonly inner: KvSnapshot,
    private readonly id: string,
    private readonly expected: string | null,
    private readonly refused: () => void,
  ) {}

  /** Takes the stored incarnation `stored`; throws when it is another's. */
  private take(stored: string | undefined): void {
    if (servesIncarnation(stored, this.expected)) {
      this.confirmed = true;
      return;
    }
    if (!this.failure) {
      this.failure = replacedError(this.id);
      this.refused();
    }
    throw this.failure;
  }

  /** Confirms the incarnation at once where the store can: true when confirmed, NOT_READY else. */
  private confirmNow(): true | NotReady {
    if (this.confirmed) return true;
    if (this.failure || this.reading) return NOT_READY;
    const stored = this.inner.tryGetSync(incarnationKey(this.id));
    if (stored === NOT_READY) return NOT_READY;
    try {
      this.take(stored);
    } catch {
      return NOT_READY;
    }
    return true;
  }

  /** Undefined once confirmed; else the read confirming it, begun now (with the caller's read, in the same tick). */
  private confirm(): Promise<void> | undefined {
    if (this.confirmNow() === true) return undefined;
    if (this.failure) return Promise.reject(this.failure);
    this.reading ??= this.inner.get(incarnationKey(this.id)).then((stored) => this.take(stored));
    return this.reading;
  }

  get(key: Buffer): Promise<string | undefined> {
    const confirming = this.confirm();
    if (confirming === undefined) return this.inner.get(key);
    // Asked for with the incarnation (none once refused), answered after it; a read whose answer
    // is not wanted fails unheard.
    const read = this.failure ? undefined : this.inner.get(key);
    read?.catch(() => {});
    return confirming.then(() => read as Promise<string | undefined>);
  }

  tryGetSync(key: Buffer): string | undefined | NotReady {
    return this.confirmNow() === true ? this.inner.tryGetSync(key) : NOT_READY;
  }

  tryScanSync(options: KvIterateOptions, want: number): KeptScan | NotReady {
    if (this.inner.tryScanSync === undefined || this.confirmNow() !== true) return NOT_READY;
    return this.inner.tryScanSync(options, want);
  }

  iterate(options: KvIterateOptions): KvIterator {
    const iterator = this.inner.iterate(options);
    return {
      next: (max) => {
        const confirming = this.confirm();
        if (confirming === undefined) return iterator.next(max);
        const entries = this.failure ? undefined : iterator.next(max);
        entries?.catch(() => {});
        return confirming.then(() => entries as Promise<Array<[Buffer, string]>>);
      },
      close: () => iterator.close(),
    };
  }

  prepare(): Promise<void> {
    return this.inner.prepare?.() ?? Promise.resolve();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
