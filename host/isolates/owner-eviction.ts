/** A deployment's runner, as an eviction sees it. */
export interface Evictable {
  readonly isLive: boolean;
  readonly busy: boolean;
}

/** What {@link evictHeaviestOwnersFirst} weighs, until when, and which runners it may take. */
export interface EvictionRule<T> {
  /** A developer, or an unclaimed deployment alone. */
  ownerOf: (runner: T) => string;
  /** An isolate's heap, or 1 to count isolates. */
  weightOf: (runner: T) => number;
  /** True while runners must go. */
  over: () => boolean;
  evict: (runner: T) => void;
  /**
   * With a budget, an owner whose live runners weigh no more than their even share of it (the
   * budget over the owners with some live, or weighed draining) is never picked.
   */
  budget?: number;
  /** Takes busy runners, the heaviest first, instead of idle ones (see {@link evictHeaviestOwnersFirst}). */
  busy?: boolean;
  /**
   * Weighs runners with no live isolate too: their weight is an isolate a redeploy replaced while
   * calls still ran in it (isolate-drain.ts), which counts for its owner, and which a busy rule may
   * take (its calls fail).
   */
  weighsDraining?: boolean;
}

/**
 * Evicts idle `runners` while `rule.over()` holds: each time the least recently used (`runners`
 * come in that order) of the owner whose live runners weigh most, so one developer's many
 * deployments go before anyone else's isolates. Busy runners stay, their calls bounded by the
 * scheduler's slots, unless `rule.busy` asks for them: then only busy ones go, the heaviest first
 * (the last resort of a host whose memory is past its budget with nothing idle left to evict). A
 * runner of weight 0 frees nothing that counts and stays too. With `rule.budget`, an owner within
 * an even share of it is never picked: a developer whose isolates were all busy made each reading
 * evict the next developers' idle ones instead.
 */
export function evictHeaviestOwnersFirst<T extends Evictable>(
  runners: Iterable<T>,
  rule: EvictionRule<T>,
): void {
  const { ownerOf, weightOf, over, evict, budget, busy = false, weighsDraining = false } = rule;
  const owners = new Map<string, { weight: number; candidates: T[] }>();
  for (const runner of runners) {
    const weight = runner.isLive || weighsDraining ? weightOf(runner) : 0;
    if (!runner.isLive && weight <= 0) continue;
    const key = ownerOf(runner);
    let owner = owners.get(key);
    if (!owner) {
      owner = { weight: 0, candidates: [] };
      owners.set(key, owner);
    }
    owner.weight += weight;
    // An idle runner with no live isolate has nothing to evict.
    if (runner.busy === busy && weight > 0 && (runner.isLive || busy)) owner.candidates.push(runner);
  }
  if (busy) for (const owner of owners.values()) owner.candidates.sort((a, b) => weightOf(b) - weightOf(a));
  const share = budget !== undefined && owners.size > 0 ? budget / owners.size : Number.NEGATIVE_INFINITY;
  while (over()) {
    let heaviest: { weight: number; candidates: T[] } | undefined;
    for (const owner of owners.values())
      if (
        owner.candidates.length > 0 &&
        owner.weight > share &&
        (!heaviest || owner.weight > heaviest.weight)
      )
        heaviest = owner;
    const runner = heaviest?.candidates.shift();
    if (!heaviest || !runner) return;
    heaviest.weight -= weightOf(runner);
    evict(runner);
  }
}
