/** A deployment's runner, as an eviction sees it. */
export interface Evictable {
  readonly isLive: boolean;
  readonly busy: boolean;
}

/**
 * Evicts idle `runners` (through `evict`) while `over()` holds: each time the least recently used
 * (`runners` come in that order) of the owner (`ownerOf`: a developer, or an unclaimed deployment
 * alone) whose live runners weigh most (`weightOf`: an isolate's heap, or 1 to count isolates), so
 * one developer's many deployments go before anyone else's isolates. Busy runners stay: their
 * calls are bounded by the scheduler's slots. A runner of weight 0 frees nothing that counts and
 * stays too. With `fairShare`, an owner whose live runners weigh no more than their even share
 * (the total over the owners with some live) is never picked: a developer whose isolates are all
 * busy made each reading evict the next developers' idle ones instead.
 */
export function evictHeaviestOwnersFirst<T extends Evictable>(
  runners: Iterable<T>,
  ownerOf: (runner: T) => string,
  weightOf: (runner: T) => number,
  over: () => boolean,
  evict: (runner: T) => void,
  fairShare = false,
): void {
  const owners = new Map<string, { weight: number; idle: T[] }>();
  for (const runner of runners) {
    if (!runner.isLive) continue;
    const key = ownerOf(runner);
    let owner = owners.get(key);
    if (!owner) {
      owner = { weight: 0, idle: [] };
      owners.set(key, owner);
    }
    const weight = weightOf(runner);
    owner.weight += weight;
    if (!runner.busy && weight > 0) owner.idle.push(runner);
  }
  let total = 0;
  for (const owner of owners.values()) total += owner.weight;
  const share = fairShare && owners.size > 0 ? total / owners.size : Number.NEGATIVE_INFINITY;
  while (over()) {
    let heaviest: { weight: number; idle: T[] } | undefined;
    for (const owner of owners.values())
      if (owner.idle.length > 0 && owner.weight > share && (!heaviest || owner.weight > heaviest.weight))
        heaviest = owner;
    const runner = heaviest?.idle.shift();
    if (!heaviest || !runner) return;
    heaviest.weight -= weightOf(runner);
    evict(runner);
  }
}
