/**
 * Edit distance between two short names: insertions, deletions, substitutions and swaps of two
 * neighbouring characters each count one (optimal string alignment, as commander's "did you mean"
 * does), so the commonest typo, `lsit` for `list`, is one edit. Names here are handler, table and
 * command names, a few dozen characters at most (distances are kept as 16-bit numbers), so the
 * plain O(a * b) computation is enough and no dependency is needed.
 */
export function editDistance(a: string, b: string): number {
  // A band as wide as the longer name holds every cell, and no distance passes that length.
  return editDistanceWithin(a, b, Math.max(a.length, b.length));
}

/**
 * {@link editDistance}, or `limit + 1` as soon as it must be more than `limit`: only the band of
 * cells within `limit` of the diagonal, in three rows of numbers instead of a table, skipped when
 * the lengths differ by more, stopped once two rows in a row are past it (no later row can come
 * back under it). A "did you mean" looks at every declared name on each miss.
 */
function editDistanceWithin(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  const past = limit + 1;
  let before = new Uint16Array(b.length + 1).fill(past);
  let above = Uint16Array.from({ length: b.length + 1 }, (_, j) => Math.min(j, past));
  let row = new Uint16Array(b.length + 1);
  let aboveSmallest = 0;
  for (let i = 1; i <= a.length; i++) {
    const first = Math.max(1, i - limit);
    const last = Math.min(b.length, i + limit);
    // The cells just outside the band are past it: the next row reads them.
    row[0] = Math.min(i, past);
    row[first - 1] = first === 1 ? (row[0] as number) : past;
    if (last < b.length) row[last + 1] = past;
    let smallest = first === 1 ? (row[0] as number) : past;
    for (let j = first; j <= last; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (above[j - 1] as number) + cost,
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, (before[j - 2] as number) + 1);
      row[j] = Math.min(best, past);
      if (best < smallest) smallest = best;
    }
    if (smallest > limit && aboveSmallest > limit) return past;
    aboveSmallest = smallest;
    [before, above, row] = [above, row, before];
  }
  return Math.min(above[b.length] as number, past);
}

/** Edits a "did you mean" allows at most, whatever the names' length. */
const MOST_EDITS = 3;

/**
 * The candidate a mistyped `name` most likely meant, for a "did you mean" hint: the closest by
 * {@link editDistance} ignoring case (exact case breaks ties), and only when it is close enough to
 * be a typo: at most a third of the longer name's length (and 3), and at least one edit. Undefined when
 * nothing is that close, so an unrelated name is never offered.
 *
 * @example nearestName("lsit", ["list", "add"]) // "list"
 */
export function nearestName(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  const lower = name.toLowerCase();
  for (const candidate of candidates) {
    if (candidate === name) continue;
    const allowed = Math.min(
      MOST_EDITS,
      Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3)),
    );
    const distance = editDistanceWithin(lower, candidate.toLowerCase(), allowed);
    if (distance > allowed) continue;
    // Fractions below one edit: among equally close names, the one whose case matches wins.
    const score = distance + editDistanceWithin(name, candidate, distance + MOST_EDITS) / 1000;
    if (distance <= allowed && score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  return best;
}
