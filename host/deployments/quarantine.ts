import { PlatformError } from "../../sdk/values/index.js";
import type { QuarantineList } from "./quarantine-book.js";
import type { DeploymentRecord } from "./records.js";

/** Why a deployment is refused now, and until when (ms since epoch). */
export interface Held {
  until: number;
  why: "bundle" | "deployment" | "owner";
}

const noneHeld = (): QuarantineList => ({ bundles: {}, deployments: {}, owners: {} });

/** Keeps the entries of `value` whose times are numbers (what a server is handed is checked, not trusted). */
function times(value: unknown): Record<string, number> {
  if (typeof value !== "object" || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter(([, until]) => typeof until === "number"));
}

/**
 * What this server process refuses to run: code that crashed an earlier server process (a
 * catastrophic V8 error takes the whole process down, and with it every tenant's requests), as
 * the supervisor hands it over (see quarantine-book.ts): bundles (every deployment of those exact
 * bytes could crash the host the same way), deployments (whatever bundle they run next) and
 * developers (every deployment they own). A refused deployment answers `503 unavailable` with
 * `Retry-After` until its quarantine ends, and takes no deploy meanwhile.
 */
export class Quarantine {
  private list = noneHeld();
  private empty = true;

  /** Refuses what `list` names until the given times, replacing the earlier list. */
  replace(list: QuarantineList): void {
    this.list = list;
    this.empty = Object.values(list).every((until) => Object.keys(until).length === 0);
  }

  /** True when anything at all was handed over (ended or not). */
  get holdsAny(): boolean {
    return !this.empty;
  }

  /** The quarantine the supervisor hands a server process; anything malformed counts as none. */
  static parse(value: unknown): QuarantineList {
    if (typeof value !== "object" || value === null) return noneHeld();
    const { bundles, deployments, owners } = value as Partial<Record<keyof QuarantineList, unknown>>;
    return { bundles: times(bundles), deployments: times(deployments), owners: times(owners) };
  }

  /** How many of each kind are refused now (the host's metrics read it). */
  activeCounts(): Record<keyof QuarantineList, number> {
    const now = Date.now();
    const active = (until: Record<string, number>) => Object.values(until).filter((end) => end > now).length;
    return {
      bundles: active(this.list.bundles),
      deployments: active(this.list.deployments),
      owners: active(this.list.owners),
    };
  }

  /**
   * Until when (ms since epoch) and why deployment `id` of developer `owner` (null: unclaimed)
   * running bundle `artifact` (undefined: any) is refused, if it is now.
   */
  held(artifact: string | undefined, id: string, owner: string | null): Held | undefined {
    if (this.empty) return undefined;
    const now = Date.now();
    const { bundles, deployments, owners } = this.list;
    let held: Held | undefined;
    const consider = (until: Record<string, number>, key: string | null | undefined, why: Held["why"]) => {
      const end = key != null && Object.hasOwn(until, key) ? (until[key] as number) : 0;
      if (end > now && (!held || end > held.until)) held = { until: end, why };
    };
    consider(bundles, artifact, "bundle");
    consider(deployments, id, "deployment");
    consider(owners, owner, "owner");
    return held;
  }

  /**
   * Throws `unavailable` (with the seconds left as `Retry-After`) when `record` is quarantined. One
   * check per call while nothing is quarantined.
   */
  check(record: DeploymentRecord): void {
    const held = this.held(record.artifact, record.id, record.owner);
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
   * Throws `unavailable` (with `Retry-After`) when deployment `id`, owned by `owner` (null:
   * unclaimed), is quarantined: a deploy runs the new code's top level in an isolate, which could
   * crash the host again, and a new bundle would otherwise start its quarantine afresh.
   */
  checkDeploy(id: string, owner: string | null): void {
    const held = this.held(undefined, id, owner);
    if (!held) return;
    const seconds = secondsLeft(held);
    const whose = held.why === "owner" ? `Deployments of developer ${owner}` : `Deployment ${id}`;
    throw new PlatformError(
      "unavailable",
      `${whose} ${held.why === "owner" ? "are" : "is"} quarantined for ${seconds} s: code deployed there crashed the host. Deploy again after that, with handlers that do not allocate without bound (the host log names the crash).`,
      { retryAfterSeconds: seconds },
    );
  }
}

function secondsLeft(held: Held): number {
  return Math.max(1, Math.ceil((held.until - Date.now()) / 1000));
}

/** The server process's quarantine, filled at start-up from what the supervisor hands over. */
export const quarantine = new Quarantine();
