/** Slots a table starts with; it doubles when two live keys would share one. */
const INITIAL_SLOTS = 16;

/**
 * A table larger than this starts small again once empty. Below it the table keeps its size: a busy
 * deployment empties its table between bursts, and regrowing it each time would cost more than the
 * slots.
 */
const SHRINK_ABOVE = 1024;

/**
 * Values keyed by positive integers that mostly increase (a request counter), in storage that is
 * reused, not reallocated, as keys come and go. A long-lived `Map` with steady inserts and deletes
 * rebuilds its hash table every few dozen operations, and once the table has moved to V8's old
 * generation each rebuilt one is allocated there too, while the discarded tables keep pointing at
 * their former entries until the next full collection. Every young-generation collection then
 * keeps those entries, and all they reach (a request's transaction, closures, buffers), alive and
 * promotes them: in the host that cost several kilobytes and microseconds per request, in some
 * processes and not others. Here a key's slot is its value modulo the capacity, a removed entry's
 * slot is cleared at once, and the arrays grow (clearing the old ones) only when two live keys meet.
 */
export class SlotTable<T> {
  private keys = new Float64Array(INITIAL_SLOTS);
  private values: Array<T | undefined> = new Array<T | undefined>(INITIAL_SLOTS).fill(undefined);
  private count = 0;

  /** Number of entries. */
  get size(): number {
    return this.count;
  }

  /** Slots the table has now (it grows in powers of two). */
  get capacity(): number {
    return this.keys.length;
  }

  /** The value under `key`, or undefined. Any number may be asked for, forged or not. */
  get(key: number): T | undefined {
    if (!Number.isSafeInteger(key) || key <= 0) return undefined;
    const slot = key % this.keys.length;
    return this.keys[slot] === key ? this.values[slot] : undefined;
  }

  /** Stores `value` (never `undefined`: it marks a free slot) under `key` (a positive safe integer). */
  set(key: number, value: T): void {
    if (!Number.isSafeInteger(key) || key <= 0)
      throw new RangeError(`A slot table key must be a positive integer, not ${key}.`);
    let slot = key % this.keys.length;
    while (this.values[slot] !== undefined && this.keys[slot] !== key) {
      this.grow();
      slot = key % this.keys.length;
    }
    if (this.values[slot] === undefined) this.count++;
    this.keys[slot] = key;
    this.values[slot] = value;
  }

  /** Removes `key`'s entry; true when there was one. */
  delete(key: number): boolean {
    if (this.get(key) === undefined) return false;
    const slot = key % this.keys.length;
    this.keys[slot] = 0;
    this.values[slot] = undefined;
    this.count--;
    // A stuck entry may have made the table large; once it is empty it starts small again.
    if (this.count === 0 && this.keys.length > SHRINK_ABOVE) {
      this.keys = new Float64Array(INITIAL_SLOTS);
      this.values = new Array<T | undefined>(INITIAL_SLOTS).fill(undefined);
    }
    return true;
  }

  /** Calls `visit` for every entry; `visit` may delete entries (its own or others) but not add any. */
  forEach(visit: (value: T, key: number) => void): void {
    for (let slot = 0; slot < this.values.length; slot++) {
      const value = this.values[slot];
      if (value !== undefined) visit(value, this.keys[slot] as number);
    }
  }

  /** Doubles the capacity until every live key has a slot of its own; clears the old arrays. */
  private grow(): void {
    const oldKeys = this.keys;
    const oldValues = this.values;
    let capacity = oldKeys.length * 2;
    for (;;) {
      const taken = new Set<number>();
      let fits = true;
      for (let slot = 0; slot < oldValues.length && fits; slot++) {
        if (oldValues[slot] === undefined) continue;
        const at = (oldKeys[slot] as number) % capacity;
        fits = !taken.has(at);
        taken.add(at);
      }
      if (fits) break;
      capacity *= 2;
    }
    this.keys = new Float64Array(capacity);
    this.values = new Array<T | undefined>(capacity).fill(undefined);
    for (let slot = 0; slot < oldValues.length; slot++) {
      const value = oldValues[slot];
      if (value === undefined) continue;
      const key = oldKeys[slot] as number;
      this.keys[key % capacity] = key;
      this.values[key % capacity] = value;
    }
    oldValues.fill(undefined);
  }
}
