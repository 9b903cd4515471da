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

/** What live queries may hold (bytes): see {@link HeldBytes}. */
export interface HeldLimits {
  /** One deployment's subscriptions together. */
  deployment: number;
  /** The subscriptions one caller (client address) of a deployment started. */
  caller: number;
  /** Every deployment's together, beyond which a deployment may grow to its even share only. */
  host: number;
}

/** Who a group's bytes are charged to. */
interface Charge {
  deployment: string;
  caller: string;
  bytes: number;
}

/** Bytes already promised beside a check (runs started for room that was freed, not yet kept). */
export interface Promised {
  deployment: number;
  caller: number;
}

const NOTHING_PROMISED: Promised = { deployment: 0, caller: 0 };

/**
 * The bytes the shared subscriptions hold (their latest outcomes and read sets), bounded three
 * ways: per deployment, so a tenant subscribing to many large or wide queries fills its own share;
 * per caller of a deployment, so one client subscribing with ever new arguments cannot fill its
 * deployment's share and refuse everyone else's; and per host, where a deployment past the host's
 * figure may still grow to its even share of it (the host's figure divided among the deployments
 * holding anything), and all together never past twice it: no tenant's use starves another.
 */
export class HeldBytes<G> {
  private readonly byDeployment = new Map<string, number>();
  private readonly byCaller = new Map<string, number>();
  private readonly byGroup = new Map<G, Charge>();
  private total = 0;

  constructor(readonly limits: HeldLimits) {}

  /** What `group` holds now. */
  of(group: G): number {
    return this.byGroup.get(group)?.bytes ?? 0;
  }

  /** What `deployment` holds now. */
  ofDeployment(deployment: string): number {
    return this.byDeployment.get(deployment) ?? 0;
  }

  /**
   * Which limit `group`, charged to `caller` of `deployment`, would pass by holding `bytes`
   * instead of what it holds, beside what is `promised` to others of the same deployment and
   * caller; undefined when it fits.
   */
  passed(
    deployment: string,
    caller: string,
    group: G,
    bytes: number,
    promised = NOTHING_PROMISED,
  ): keyof HeldLimits | undefined {
    const held = this.byGroup.get(group);
    const before = held?.bytes ?? 0;
    const ofDeployment = this.ofDeployment(deployment) - before + bytes + promised.deployment;
    if (ofDeployment > this.limits.deployment) return "deployment";
    const sameCaller = held?.caller === caller ? before : 0;
    const ofCaller =
      (this.byCaller.get(callerKey(deployment, caller)) ?? 0) - sameCaller + bytes + promised.caller;
    if (ofCaller > this.limits.caller) return "caller";
    const total = this.total - before + bytes + promised.deployment;
    if (total <= this.limits.host) return undefined;
    // Past it, each deployment grows to its even share of it, and all together never past twice it.
    const holding = this.byDeployment.size + (this.byDeployment.has(deployment) ? 0 : 1);
    return ofDeployment <= this.limits.host / holding && total <= 2 * this.limits.host ? undefined : "host";
  }

  /**
   * Makes `group` hold `bytes`, charged to `caller` of `deployment`, unless it would hold more
   * than before and pass a limit: then it answers which, holding what it held. `force` holds it
   * anyway (an error outcome of a few hundred bytes must be kept).
   */
  hold(
    deployment: string,
    caller: string,
    group: G,
    bytes: number,
    force = false,
  ): keyof HeldLimits | undefined {
    if (!force && bytes > this.of(group)) {
      const passed = this.passed(deployment, caller, group, bytes);
      if (passed) return passed;
    }
    this.release(group);
    this.byGroup.set(group, { deployment, caller, bytes });
    this.add(deployment, caller, bytes);
    return undefined;
  }

  /** Charges what `group` holds to `caller` from now on (the caller it was charged to left it). */
  chargeTo(group: G, caller: string): void {
    const held = this.byGroup.get(group);
    if (!held || held.caller === caller) return;
    this.hold(held.deployment, caller, group, held.bytes, true);
  }

  /** Forgets `group` (its last subscriber left). */
  release(group: G): void {
    const held = this.byGroup.get(group);
    if (!held) return;
    this.byGroup.delete(group);
    this.add(held.deployment, held.caller, -held.bytes);
  }

  clear(): void {
    this.byDeployment.clear();
    this.byCaller.clear();
    this.byGroup.clear();
    this.total = 0;
  }

  private add(deployment: string, caller: string, bytes: number): void {
    this.total += bytes;
    addTo(this.byDeployment, deployment, bytes);
    addTo(this.byCaller, callerKey(deployment, caller), bytes);
  }
}

function callerKey(deployment: string, caller: string): string {
  return `${deployment}\u0000${caller}`;
}

/** Adds `bytes` to `key`'s figure, forgetting it at zero (a map of the ones holding anything). */
function addTo(totals: Map<string, number>, key: string, bytes: number): void {
  const total = (totals.get(key) ?? 0) + bytes;
  if (total > 0) totals.set(key, total);
  else totals.delete(key);
}
