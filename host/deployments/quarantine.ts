import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { DeploymentRecord } from "./records.js";

/** One bundle's quarantine as the supervisor keeps it across server processes. */
export interface QuarantineEntry {
  /** Refused until this time (ms since epoch). */
  until: number;
  /** Length of this quarantine (ms); the next crash soon after doubles it. */
  lengthMs: number;
}

/**
 * The quarantine after bundle `artifact`'s code crashed the host at `now`: {@link
 * LIMITS.quarantineFirstMs} the first time, twice the last one (up to {@link
 * LIMITS.quarantineMaxMs}) when it crashes again within that cap of its last quarantine's end.
 */
export function nextQuarantine(last: QuarantineEntry | undefined, now: number): QuarantineEntry {
  const again = last !== undefined && now - last.until < LIMITS.quarantineMaxMs;
  const lengthMs = again ? Math.min(LIMITS.quarantineMaxMs, last.lengthMs * 2) : LIMITS.quarantineFirstMs;
  return { until: now + lengthMs, lengthMs };
}

/**
 * The bundles this server process refuses to run: code that crashed an earlier server process (a
 * catastrophic V8 error takes the whole process down, and with it every tenant's requests). A
 * deployment running such a bundle answers `503 unavailable` with `Retry-After` until its
 * quarantine ends. Keyed by bundle, because the isolate that crashed knows only its bundle; every
 * deployment of those exact bytes could crash the host the same way.
 */
export class Quarantine {
  private readonly until = new Map<string, number>();

  /** Refuses bundles until the given times (ms since epoch), replacing the earlier list. */
  replace(entries: Record<string, number>): void {
    this.until.clear();
    for (const [artifact, until] of Object.entries(entries)) this.until.set(artifact, until);
  }

  /**
   * The quarantine the supervisor hands a server process, `{ "<artifact>": <until, ms since
   * epoch> }`; anything else counts as none.
   */
  static parse(value: unknown): Record<string, number> {
    if (typeof value !== "object" || value === null) return {};
    return Object.fromEntries(Object.entries(value).filter(([, until]) => typeof until === "number"));
  }

  /** How many bundles are refused now (the host's metrics read it). */
  activeCount(): number {
    const now = Date.now();
    let active = 0;
    for (const until of this.until.values()) if (until > now) active++;
    return active;
  }

  /** True when `artifact` is refused now. */
  holds(artifact: string): boolean {
    const until = this.until.get(artifact);
    return until !== undefined && until > Date.now();
  }

  /**
   * Throws `unavailable` (with the seconds left as `Retry-After`) when `record`'s bundle is
   * quarantined. One size check per call while nothing is quarantined.
   */
  check(record: DeploymentRecord): void {
    if (this.until.size === 0) return;
    const until = this.until.get(record.artifact);
    if (until === undefined) return;
    const leftMs = until - Date.now();
    if (leftMs <= 0) {
      this.until.delete(record.artifact);
      return;
    }
    const seconds = Math.ceil(leftMs / 1000);
    throw new PlatformError(
      "unavailable",
      `Deployment ${record.id} is quarantined for ${seconds} s: a request to it crashed the host. Retry after that; its developer should look for handlers that allocate without bound (the host log names the crash).`,
      { retryAfterSeconds: seconds },
    );
  }
}

/** The server process's quarantine, filled at start-up from what the supervisor hands over. */
export const quarantine = new Quarantine();
