import type { ReadSet } from "../db/index.js";

/**
 * What each key or range a live query watches costs beyond its bytes: its entries in the read-set
 * index (a map entry and a set of its own, or a tree node, its handle and its strings' headers).
 * Measured: 4096 keys or ranges of 24 bytes each grew the heap by 223-225 bytes each beyond them.
 */
const WATCHED_ENTRY_BYTES = 224;

/** The memory a live query's read set takes once indexed, as {@link HeldBytes} counts it. */
export function readSetBytes(readSet: ReadSet | undefined): number {
  if (!readSet) return 0;
  let bytes = 0;
  for (const key of readSet.keys) bytes += key.length + WATCHED_ENTRY_BYTES;
  for (const range of readSet.ranges) bytes += range.start.length + range.end.length + WATCHED_ENTRY_BYTES;
  return bytes;
}

/**
 * The bytes the shared subscriptions of each deployment hold (their latest outcomes and read sets),
 * bounded per deployment: a tenant subscribing to many large or wide queries fills its own share,
 * never the host's memory.
 */
export class HeldBytes<G> {
  private readonly byDeployment = new Map<string, number>();
  private readonly byGroup = new Map<G, { deployment: string; bytes: number }>();

  constructor(readonly limit: number) {}

  /** What `group` holds now. */
  of(group: G): number {
    return this.byGroup.get(group)?.bytes ?? 0;
  }

  /** What `deployment` holds now. */
  ofDeployment(deployment: string): number {
    return this.byDeployment.get(deployment) ?? 0;
  }

  /**
   * Makes `group` hold `bytes` instead of what it held, unless that would take its deployment past
   * the limit; `force` holds it anyway (an error outcome of a few hundred bytes must be kept).
   */
  hold(deployment: string, group: G, bytes: number, force = false): boolean {
    const before = this.of(group);
    const total = this.ofDeployment(deployment) - before + bytes;
    if (!force && bytes > before && total > this.limit) return false;
    this.byGroup.set(group, { deployment, bytes });
    this.byDeployment.set(deployment, total);
    return true;
  }

  /** Forgets `group` (its last subscriber left). */
  release(group: G): void {
    const held = this.byGroup.get(group);
    if (!held) return;
    this.byGroup.delete(group);
    const total = this.ofDeployment(held.deployment) - held.bytes;
    if (total > 0) this.byDeployment.set(held.deployment, total);
    else this.byDeployment.delete(held.deployment);
  }

  clear(): void {
    this.byDeployment.clear();
    this.byGroup.clear();
  }
}
