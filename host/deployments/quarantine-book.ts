import { LIMITS } from "../../sdk/protocol/index.js";
import type { CrashSubject } from "../isolates/crash-record.js";

/** One quarantine as the supervisor keeps it across server processes. */
export interface QuarantineEntry {
  /** Refused until this time (ms since epoch). */
  until: number;
  /** Length of this quarantine (ms); the next crash soon after doubles it. */
  lengthMs: number;
}

/** What is quarantined, by kind, each until a time (ms since epoch): what a server is handed. */
export interface QuarantineList {
  /** Bundle hashes: every deployment running those bytes. */
  bundles: Record<string, number>;
  /** Deployment ids, whatever bundle they run next. */
  deployments: Record<string, number>;
  /** Developer ids: every deployment they own, and their deploys. */
  owners: Record<string, number>;
}

/**
 * The quarantine after code crashed the host at `now`, when `last` was the one before: `firstMs`
 * the first time, twice the last one (up to {@link LIMITS.quarantineMaxMs}) when it crashes again
 * within that cap of its last quarantine's end.
 */
export function nextQuarantine(
  last: QuarantineEntry | undefined,
  now: number,
  firstMs: number = LIMITS.quarantineFirstMs,
): QuarantineEntry {
  const again = last !== undefined && now - last.until < LIMITS.quarantineMaxMs;
  const lengthMs = again ? Math.min(LIMITS.quarantineMaxMs, last.lengthMs * 2) : firstMs;
  return { until: now + lengthMs, lengthMs };
}

/** A developer's recent crashes: from which deployments, when; and their quarantine, if any. */
interface OwnerCrashes {
  from: Map<string, number>;
  entry?: QuarantineEntry;
}

/**
 * The supervisor's record of code that crashed its server processes, and the quarantines that
 * follow. Each crash quarantines its bundle and its deployment, each doubling on repeat: a
 * developer who deploys a changed bundle after each crash does not start at the first length
 * again. A developer whose deployments crashed the host from two of them within {@link
 * LIMITS.quarantineMaxMs} is quarantined too (every deployment they own, and their deploys),
 * doubling on repeat: many deployments, each crashing once, would otherwise each cost a restart.
 * One deployment crashing twice does not quarantine its developer's other deployments.
 */
export class QuarantineBook {
  private readonly bundles = new Map<string, QuarantineEntry>();
  private readonly deployments = new Map<string, QuarantineEntry>();
  private readonly owners = new Map<string, OwnerCrashes>();

  /** `firstMs`: a first quarantine's length (`platform host --quarantine`). */
  constructor(private readonly firstMs: number = LIMITS.quarantineFirstMs) {}

  /** Records that `subject`'s code crashed the host at `now`; returns what it quarantines, for the log. */
  record(subject: CrashSubject, now: number): string[] {
    const said: string[] = [];
    const quarantine = (book: Map<string, QuarantineEntry>, key: string, what: string) => {
      const entry = nextQuarantine(book.get(key), now, this.firstMs);
      book.set(key, entry);
      said.push(`quarantining ${what} ${key} for ${entry.lengthMs / 1000} s: it crashed the server`);
    };
    quarantine(this.bundles, subject.artifact, "bundle");
    if (subject.deployment) quarantine(this.deployments, subject.deployment, "deployment");
    if (subject.owner) {
      const crashes = this.owners.get(subject.owner) ?? { from: new Map<string, number>() };
      this.owners.set(subject.owner, crashes);
      for (const [from, at] of crashes.from) if (now - at > LIMITS.quarantineMaxMs) crashes.from.delete(from);
      crashes.from.set(subject.deployment ?? subject.artifact, now);
      if (crashes.from.size >= 2) {
        crashes.entry = nextQuarantine(crashes.entry, now, this.firstMs);
        said.push(
          `quarantining developer ${subject.owner} for ${crashes.entry.lengthMs / 1000} s: ${crashes.from.size} of their deployments crashed the server`,
        );
      }
    }
    return said;
  }

  /** The quarantines in force at `now`, for a server process starting; forgets long-ended ones. */
  handOver(now: number): QuarantineList {
    // Past the cap after its end, a crash starts afresh (nextQuarantine): nothing to keep.
    const stale = (entry: QuarantineEntry | undefined) =>
      !entry || now - entry.until >= LIMITS.quarantineMaxMs;
    const inForce = (book: Map<string, QuarantineEntry>) => {
      const until: Record<string, number> = {};
      for (const [key, entry] of book) {
        if (entry.until > now) until[key] = entry.until;
        else if (stale(entry)) book.delete(key);
      }
      return until;
    };
    const owners: Record<string, number> = {};
    for (const [owner, crashes] of this.owners) {
      if (crashes.entry && crashes.entry.until > now) owners[owner] = crashes.entry.until;
      const lastCrash = Math.max(...crashes.from.values());
      if (stale(crashes.entry) && now - lastCrash > LIMITS.quarantineMaxMs) this.owners.delete(owner);
    }
    return { bundles: inForce(this.bundles), deployments: inForce(this.deployments), owners };
  }
}
