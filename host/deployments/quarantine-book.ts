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
  /** Bundles by {@link bundleKey}: every deployment of that developer running those bytes. */
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
 * The length (ms) of a quarantine that begins at `now` after `last` ended: `firstMs` the first
 * time; else twice the last one, halved for each whole {@link LIMITS.quarantineMaxMs} since its
 * end (a repeat soon after doubles it, a long quiet brings it back down); never under `firstMs`
 * nor over that cap. So pausing between crashes does not earn a fresh start.
 */
function nextLength(last: QuarantineEntry | undefined, now: number, firstMs: number): number {
  if (last === undefined) return firstMs;
  const quiet = Math.max(0, Math.floor((now - last.until) / LIMITS.quarantineMaxMs));
  return Math.max(firstMs, Math.min(LIMITS.quarantineMaxMs, (last.lengthMs * 2) / 2 ** quiet));
}

/** The quarantine after code crashed the host at `now`, when `last` was the one before (see {@link nextLength}). */
export function nextQuarantine(
  last: QuarantineEntry | undefined,
  now: number,
  firstMs: number = LIMITS.quarantineFirstMs,
): QuarantineEntry {
  const lengthMs = nextLength(last, now, firstMs);
  return { until: now + lengthMs, lengthMs };
}

/** True while `entry` still matters at `now`: in force, or a crash now would be held longer than a first one. */
function remembered(entry: QuarantineEntry | undefined, now: number, firstMs: number): boolean {
  return entry !== undefined && (entry.until > now || nextLength(entry, now, firstMs) > firstMs);
}

/**
 * The key of a bundle's hold: its hash for one developer (`-`: unclaimed deployments, or none
 * known). Another developer's deployment of the same bytes is not held: it may never crash (the
 * crash can hang on the crashing deployment's env or data), and is held by its own crashes.
 */
export function bundleKey(artifact: string, owner: string | null | undefined): string {
  return `${owner || "-"}:${artifact}`;
}

/** A developer's recent crashes: from which deployments, when; and their quarantine, if any. */
interface OwnerCrashes {
  from: Map<string, number>;
  entry?: QuarantineEntry;
}

/**
 * One kind of quarantine's record of crashes: each crash quarantines its bundle (for its
 * developer) and its deployment, each doubling on repeat (see {@link nextLength}); a developer
 * whose deployments crashed the host from two of them within {@link LIMITS.quarantineMaxMs}, or
 * again while their last quarantine is remembered, is quarantined too. One deployment crashing
 * twice does not hold its developer's other deployments.
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
    hold(this.bundles, bundleKey(subject.artifact, subject.owner), "bundle");
    if (subject.deployment) hold(this.deployments, subject.deployment, "deployment");
    if (subject.owner) {
      const crashes = this.owners.get(subject.owner) ?? { from: new Map<string, number>() };
      this.owners.set(subject.owner, crashes);
      for (const [from, at] of crashes.from) if (now - at > LIMITS.quarantineMaxMs) crashes.from.delete(from);
      crashes.from.set(subject.deployment ?? subject.artifact, now);
      // Once held, a developer's next crash holds them again while that is remembered: waiting out
      // the older crash's 10 minutes must not make the next one count as a first.
      const again = remembered(crashes.entry, now, this.firstMs);
      if (crashes.from.size >= 2 || again) {
        crashes.entry = nextQuarantine(crashes.entry, now, this.firstMs);
        said.push(
          `${this.holding("developer")} ${subject.owner} for ${crashes.entry.lengthMs / 1000} s: ${crashes.from.size} of their deployments crashed the server lately`,
        );
      }
    }
    return said;
  }

  /**
   * True while a crash of `subject`'s deployment or developer recorded here still matters at `now`
   * (see {@link remembered}).
   */
  remembers(subject: CrashSubject, now: number): boolean {
    const deployment = subject.deployment ? this.deployments.get(subject.deployment) : undefined;
    const owner = subject.owner ? this.owners.get(subject.owner)?.entry : undefined;
    return remembered(deployment, now, this.firstMs) || remembered(owner, now, this.firstMs);
  }

  /** What is held at `now`; forgets what no longer makes a crash held longer than a first one. */
  held(now: number): HeldKinds {
    const inForce = (book: Map<string, QuarantineEntry>) => {
      const until: Record<string, number> = {};
      for (const [key, entry] of book) {
        if (entry.until > now) until[key] = entry.until;
        else if (!remembered(entry, now, this.firstMs)) book.delete(key);
      }
      return until;
    };
    const owners: Record<string, number> = {};
    for (const [owner, crashes] of this.owners) {
      if (crashes.entry && crashes.entry.until > now) owners[owner] = crashes.entry.until;
      for (const [from, at] of crashes.from) if (now - at > LIMITS.quarantineMaxMs) crashes.from.delete(from);
      if (crashes.from.size === 0 && !remembered(crashes.entry, now, this.firstMs)) this.owners.delete(owner);
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

  /**
   * Records that `subject`'s code crashed the host at `now`; returns what it holds, for the log. A
   * crash in a call holds deploys too once its deployment's or developer's deploys crashed the
   * host lately: then they crash it on purpose, and would otherwise alternate the two kinds.
   */
  record(subject: CrashSubject, now: number): string[] {
    const said = this.calls.record(subject, now);
    const deploys = subject.deploying || this.deploys.remembers(subject, now);
    return deploys ? [...said, ...this.deploys.record(subject, now)] : said;
  }

  /** The quarantines in force at `now`, for a server process starting. */
  handOver(now: number): QuarantineList {
    return { calls: this.calls.held(now), deploys: this.deploys.held(now) };
  }
}
