import { PlatformError } from "../../sdk/values/index.js";
import { bundleKey, type HeldKinds, noneHeld, type QuarantineList } from "./quarantine-book.js";
import type { DeploymentRecord } from "./records.js";

/** Why a deployment is refused now, and until when (ms since epoch). */
export interface Held {
  until: number;
  why: "bundle" | "deployment" | "owner";
}

/** Keeps the entries of `value` whose times are numbers (what a server is handed is checked, not trusted). */
function times(value: unknown): Record<string, number> {
  if (typeof value !== "object" || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter(([, until]) => typeof until === "number"));
}

function kinds(value: unknown): HeldKinds {
  if (typeof value !== "object" || value === null) return noneHeld();
  const { bundles, deployments, owners } = value as Partial<Record<keyof HeldKinds, unknown>>;
  return { bundles: times(bundles), deployments: times(deployments), owners: times(owners) };
}

/** A bundle held for every developer: what a supervisor from before bundles were per developer hands over. */
const ANY_OWNER = "*";

/**
 * The later-ending of `found` and the hold `until[key]`, if that is in force at `now` (a client
 * told to retry sooner would only be refused again).
 */
function later(
  found: Held | undefined,
  until: Record<string, number>,
  key: string | null,
  why: Held["why"],
  now: number,
): Held | undefined {
  const end = key !== null && Object.hasOwn(until, key) ? (until[key] as number) : 0;
  return end > now && (!found || end > found.until) ? { until: end, why } : found;
}

/** Until when (ms since epoch) `bundles` holds bundle `artifact` of developer `owner`, if it does at `now`. */
function bundleHeld(
  bundles: Record<string, number>,
  artifact: string,
  owner: string | null,
  now: number,
  found?: Held,
): Held | undefined {
  const forOwner = later(found, bundles, bundleKey(artifact, owner), "bundle", now);
  return later(forOwner, bundles, `${ANY_OWNER}:${artifact}`, "bundle", now);
}

/**
 * Until when (ms since epoch) and why `held` holds deployment `id` of developer `owner` (null:
 * unclaimed) running bundle `artifact`, if it does at `now`: the latest end of them.
 */
function heldIn(
  held: HeldKinds,
  artifact: string,
  id: string,
  owner: string | null,
  now: number,
): Held | undefined {
  const byDeployment = later(
    bundleHeld(held.bundles, artifact, owner, now),
    held.deployments,
    id,
    "deployment",
    now,
  );
  return later(byDeployment, held.owners, owner, "owner", now);
}

function secondsLeft(held: Held): number {
  return Math.max(1, Math.ceil((held.until - Date.now()) / 1000));
}

/**
 * What this server process refuses to run: code that crashed an earlier server process (a
 * catastrophic V8 error takes the whole process down, and with it every tenant's requests), as
 * the supervisor hands it over (see quarantine-book.ts). A deployment whose bundle, id or
 * developer is held answers `503 unavailable` with `Retry-After` until its quarantine ends; one
 * whose deploy crashed the host, or whose developer's deploys did, takes no deploy meanwhile.
 */
export class Quarantine {
  private list: QuarantineList = { calls: noneHeld(), deploys: noneHeld() };
  private empty = true;

  /** Refuses what `list` names until the given times, replacing the earlier list. */
  replace(list: QuarantineList): void {
    this.list = list;
    this.empty = [list.calls, list.deploys].every((held) =>
      Object.values(held).every((until) => Object.keys(until).length === 0),
    );
  }

  /** True when anything at all was handed over (ended or not). */
  get holdsAny(): boolean {
    return !this.empty;
  }

  /**
   * The quarantine the supervisor hands a server process; anything malformed counts as none. A
   * supervisor started before an upgrade hands bundles alone, `{ "<hash>": <until> }`: still held.
   */
  static parse(value: unknown): QuarantineList {
    const list = { calls: noneHeld(), deploys: noneHeld() };
    if (typeof value !== "object" || value === null) return list;
    if (!("calls" in value) && !("deploys" in value)) {
      for (const [hash, until] of Object.entries(times(value)))
        list.calls.bundles[`${ANY_OWNER}:${hash}`] = until;
      return list;
    }
    const { calls, deploys } = value as Partial<Record<keyof QuarantineList, unknown>>;
    return { calls: kinds(calls), deploys: kinds(deploys) };
  }

  /** How many of each kind take no calls now (the host's metrics read it). */
  activeCounts(): Record<keyof HeldKinds, number> {
    const now = Date.now();
    const active = (until: Record<string, number>) => Object.values(until).filter((end) => end > now).length;
    const { bundles, deployments, owners } = this.list.calls;
    return { bundles: active(bundles), deployments: active(deployments), owners: active(owners) };
  }

  /** Until when and why calls to `record` are refused, if they are now. */
  held(record: Pick<DeploymentRecord, "artifact" | "id" | "owner">): Held | undefined {
    if (this.empty) return undefined;
    return heldIn(this.list.calls, record.artifact, record.id, record.owner, Date.now());
  }

  /**
   * Throws `unavailable` (with the seconds left as `Retry-After`) when `record` takes no calls. One
   * check per call while nothing is quarantined.
   */
  check(record: DeploymentRecord): void {
    const held = this.held(record);
    if (!held) return;
    const seconds = secondsLeft(held);
    const cause =
      held.why === "owner"
        ? "requests to deployments of its developer crashed the host"
        : "a request to it crashed the host";
    throw new PlatformError(
      "unavailable",
      `Deployment ${record.id} is quarantined for ${seconds} s: ${cause}. Retry after that; its developer should look for handlers that allocate without bound (the host log names the crash).`,
      { retryAfterSeconds: seconds },
    );
  }

  /**
   * Throws `unavailable` (with `Retry-After`) when bundle `artifact` may not be deployed to
   * deployment `id` of developer `owner` (null: unclaimed) now: the bundle itself crashed the host
   * for that developer (in a call or deploying), or deploying to that deployment or by that
   * developer did. A deploy runs the new code's top level in an isolate, which could crash the
   * host again.
   */
  checkDeploy(artifact: string, id: string, owner: string | null): void {
    if (this.empty) return;
    const now = Date.now();
    const deploying = heldIn(this.list.deploys, artifact, id, owner, now);
    const held = bundleHeld(this.list.calls.bundles, artifact, owner, now, deploying);
    if (!held) return;
    const seconds = secondsLeft(held);
    const refused = {
      bundle: `This bundle is quarantined for ${seconds} s: it crashed the host. Change the code that allocates without bound (the host log names the crash), or deploy again after that.`,
      deployment: `Deployment ${id} takes no deploys for ${seconds} s: deploying code to it crashed the host. Deploy again after that, with top-level code that does not allocate without bound (the host log names the crash).`,
      owner: `Developer ${owner} can deploy again in ${seconds} s: deploys of theirs crashed the host. Deploy after that, with top-level code that does not allocate without bound (the host log names the crash).`,
    };
    throw new PlatformError("unavailable", refused[held.why], { retryAfterSeconds: seconds });
  }
}

/** The server process's quarantine, filled at start-up from what the supervisor hands over. */
export const quarantine = new Quarantine();
