/**
 * How the members of one group commit moved stored counts, by count name, for the members after
 * them to read (`Transaction.pendingCountChange`). Each member's moves are kept as its transaction
 * made them and summed only when a later member reads a count: a mutation of thousands of inserts
 * into indexed tables moves tens of thousands of counts, and summing them into the group's as it
 * finished held every tenant's calls about 10 ms.
 */
export class GroupCounts {
  private readonly sums = new Map<string, number>();
  private unsummed: Array<ReadonlyMap<string, number>> = [];

  /** A member's moves (its transaction's, which it no longer changes). */
  add(moves: ReadonlyMap<string, number>): void {
    this.unsummed.push(moves);
  }

  /** How the members so far moved the count `name`; undefined when none did. */
  get(name: string): number | undefined {
    if (this.unsummed.length > 0) {
      for (const moves of this.unsummed) addMoves(this.sums, moves);
      this.unsummed = [];
    }
    return this.sums.get(name);
  }
}

/** Adds each of `moves` to its count's sum in `sums`. */
export function addMoves(sums: Map<string, number>, moves: ReadonlyMap<string, number>): void {
  for (const [name, delta] of moves) sums.set(name, (sums.get(name) ?? 0) + delta);
}
