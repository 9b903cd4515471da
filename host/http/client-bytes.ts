/**
 * Bytes held for requests, per client address key and in all: what {@link BodyArrivals} (request
 * bodies arriving) and {@link UnsentAnswers} (answers not yet read) bound. Counts only; each
 * caller decides what passing its limits answers.
 */
export class ClientBytes {
  private all = 0;
  private readonly byClient = new Map<string, number>();

  /** Bytes held for client `key`. */
  of(key: string): number {
    return this.byClient.get(key) ?? 0;
  }

  /** Bytes held for every client together. */
  get total(): number {
    return this.all;
  }

  /** Holds `bytes` more for client `key`. */
  add(key: string, bytes: number): void {
    this.byClient.set(key, this.of(key) + bytes);
    this.all += bytes;
  }

  /** Gives back `bytes` held for client `key` (its entry goes once nothing is held). */
  remove(key: string, bytes: number): void {
    const left = this.of(key) - bytes;
    if (left > 0) this.byClient.set(key, left);
    else this.byClient.delete(key);
    this.all -= bytes;
  }
}
