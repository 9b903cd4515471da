/**
 * Edit distance between two short names: insertions, deletions, substitutions and swaps of two
 * neighbouring characters each count one (optimal string alignment, as commander's "did you mean"
 * does), so the commonest typo, `lsit` for `list`, is one edit. Names here are handler, table and
 * command names, a few dozen characters at most, so the plain O(a * b) table is enough and no
 * dependency is needed.
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    const above = rows[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (above[j - 1] as number) + cost,
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, (rows[i - 2]?.[j - 2] as number) + 1);
      row[j] = best;
    }
    rows.push(row);
  }
  return rows[a.length]?.[b.length] as number;
}

/**
 * The candidate a mistyped `name` most likely meant, for a "did you mean" hint: the closest by
 * {@link editDistance} ignoring case (exact case breaks ties), and only when it is close enough to
 * be a typo: at most a third of the longer name's length, and at least one edit. Undefined when
 * nothing is that close, so an unrelated name is never offered.
 *
 * @example nearestName("lsit", ["list", "add"]) // "list"
 */
export function nearestName(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    if (candidate === name) continue;
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    const allowed = Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3));
    // Fractions below one edit: among equally close names, the one whose case matches wins.
    const score = distance + editDistance(name, candidate) / 1000;
    if (distance <= allowed && score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  return best;
}
