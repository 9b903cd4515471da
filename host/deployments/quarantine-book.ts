import { LIMITS } from "../../sdk/protocol/index.js";
import type { CrashSubject } from "../isolates/crash-record.js";

/** One quarantine as the supervisor keeps it across server processes. */
export interface QuarantineEntry {
  /** Refused until this time (ms since epoch). */
  until: number;
  /** Length of this quarantine (ms); the next crash soon after doubles it. */
  lengthMs: number;
}

/** What is held, by kind, each until a time (ms since epoch). */
export interface HeldKinds {
  /** Bundle hashes: every deployment running those bytes. */
  bundles: Record<string, number>;
  /** Deployment ids, whatever bundle they run next. */
  deployments: Record<string, number>;
  /** Developer ids: every deployment they own. */
  owners: Record<string, number>;
}

/**
 * What a server is handed: what takes no calls (after any crash), and what takes no deploys or
 * imports (after a crash while deploying: only the deployer can cause one).
 */
export interface QuarantineList {
  calls: HeldKinds;
  deploys: HeldKinds;
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
 * One kind of quarantine's record of crashes: each crash quarantines its bundle and its
 * deployment, each doubling on repeat; a developer whose deployments crashed the host from two of
 * them within {@link LIMITS.quarantineMaxMs} (or again within that of their last quarantine's end)
 * is quarantined too, doubling on repeat. One deployment crashing twice does not hold its
 * developer's other deployments.
 */
class CrashLedger {
  private readonly bundles = new Map<string, QuarantineEntry>();
  private readonly deployments = new Map<string, QuarantineEntry>();
  private readonly owners = new Map<string, OwnerCrashes>();

  constructor(
    private readonly firstMs: number,
    /** How the log says this ledger holds a kind ("bundle", "deployment", "developer"). */
    private readonly holding: (kind: string) => string,
  ) {}

  record(subject: CrashSubject, now: number): string[] {
    const said: string[] = [];
    const hold = (book: Map<string, QuarantineEntry>, key: string, what: string) => {
      const entry = nextQuarantine(book.get(key), now, this.firstMs);
      book.set(key, entry);
      said.push(`${this.holding(what)} ${key} for ${entry.lengthMs / 1000} s: it crashed the server`);
    };
    hold(this.bundles, subject.artifact, "bundle");
    if (subject.deployment) hold(this.deployments, subject.deployment, "deployment");
    if (subject.owner) {
      const crashes = this.owners.get(subject.owner) ?? { from: new Map<string, number>() };
      this.owners.set(subject.owner, crashes);
      for (const [from, at] of crashes.from) if (now - at > LIMITS.quarantineMaxMs) crashes.from.delete(from);
      crashes.from.set(subject.deployment ?? subject.artifact, now);
      // Once held, a crash soon after its end holds the developer again: waiting out the older
      // crash's 10 minutes must not make the next one count as a first.
      const again = crashes.entry !== undefined && now - crashes.entry.until < LIMITS.quarantineMaxMs;
      if (crashes.from.size >= 2 || again) {
        crashes.entry = nextQuarantine(crashes.entry, now, this.firstMs);
        said.push(
          `${this.holding("developer")} ${subject.owner} for ${crashes.entry.lengthMs / 1000} s: ${crashes.from.size} of their deployments crashed the server lately`,
        );
      }
    }
    return said;
  }

  /** What is held at `now`; forgets what can no longer make a crash count as a repeat. */
  held(now: number): HeldKinds {
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

/**
 * The supervisor's record of code that crashed its server processes, and the quarantines that
 * follow (see {@link CrashLedger}): every crash holds the calls of its bundle, its deployment
 * and (on repeat across deployments) its developer, so a developer who deploys a changed bundle
 * after each crash, or crashes from each deployment in turn, does not start at the first length
 * again. A crash while deploying (the new code's top level, in a deploy's isolate) holds its
 * deployment's and developer's deploys the same way. A crash in a call does not: anyone may make
 * a call, and the owner must be able to deploy the fix.
 */
export class QuarantineBook {
  private readonly calls: CrashLedger;
  private readonly deploys: CrashLedger;

  /** `firstMs`: a first quarantine's length (`platform host --quarantine`). */
  constructor(firstMs: number = LIMITS.quarantineFirstMs) {
    this.calls = new CrashLedger(firstMs, (kind) => `quarantining ${kind}`);
    const preposition: Record<string, string> = { bundle: "of", deployment: "to", developer: "by" };
    this.deploys = new CrashLedger(firstMs, (kind) => `refusing deploys ${preposition[kind]} ${kind}`);
  }

  /** Records that `subject`'s code crashed the host at `now`; returns what it holds, for the log. */
  record(subject: CrashSubject, now: number): string[] {
    const said = this.calls.record(subject, now);
    return subject.deploying ? [...said, ...this.deploys.record(subject, now)] : said;
  }

  /** The quarantines in force at `now`, for a server process starting. */
  handOver(now: number): QuarantineList {
    return { calls: this.calls.held(now), deploys: this.deploys.held(now) };
  }
}
