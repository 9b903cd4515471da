import { LIMITS } from "../../sdk/protocol/index.js";
import type { CrashSubject } from "../isolates/crash-record.js";

/** One quarantine as the supervisor keeps it across server processes. */
export interface QuarantineEntry {
  /** Calls refused until this time (ms since epoch). */
  until: number;
  /** Length of the last crash's quarantine (ms); the next crash soon after doubles it. */
  lengthMs: number;
  /** Deploys refused until this time (ms since epoch; 0: none): after crashes while deploying. */
  deploysUntil: number;
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

/** Nothing held. */
export function noneHeld(): HeldKinds {
  return { bundles: {}, deployments: {}, owners: {} };
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

/**
 * The quarantine after code crashed the host at `now`, `deploying` it or in a call, when `last`
 * was the one before (see {@link nextLength}). A crash while `last` still holds calls (a deploy's,
 * after a crash in a call left deploys open for the fix) adds its length after that hold's end:
 * every crash of one chain costs its whole length, whichever kind it was.
 */
export function nextQuarantine(
  last: QuarantineEntry | undefined,
  now: number,
  firstMs: number = LIMITS.quarantineFirstMs,
  deploying = false,
): QuarantineEntry {
  const lengthMs = nextLength(last, now, firstMs);
  const until = Math.max(now, last?.until ?? 0) + lengthMs;
  return { until, lengthMs, deploysUntil: deploying ? until : (last?.deploysUntil ?? 0) };
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
 * The supervisor's record of code that crashed its server processes, and the quarantines that
 * follow. Each crash holds the calls of its bundle (for its developer) and of its deployment, and
 * of its developer once two of their deployments crashed the host within {@link
 * LIMITS.quarantineMaxMs}, or one has while their last quarantine is remembered; each hold doubles
 * on repeat and halves over quiet spells ({@link nextLength}). So a developer who deploys a
 * changed bundle after each crash, or crashes from each deployment in turn, does not start at the
 * first length again. A crash while deploying (the new code's top level, in a deploy's own
 * isolate) holds the same deploys too. A crash in a call does not: anyone may make a call, and the
 * owner must be able to deploy the fix; a deploy that then crashes the host continues the same
 * chain ({@link nextQuarantine}). One deployment crashing twice does not hold its developer's
 * other deployments.
 */
export class QuarantineBook {
  private readonly bundles = new Map<string, QuarantineEntry>();
  private readonly deployments = new Map<string, QuarantineEntry>();
  private readonly owners = new Map<string, OwnerCrashes>();

  /** `firstMs`: a first quarantine's length (`platform host --quarantine`). */
  constructor(private readonly firstMs: number = LIMITS.quarantineFirstMs) {}

  /** Records that `subject`'s code crashed the host at `now`; returns what it holds, for the log. */
  record(subject: CrashSubject, now: number): string[] {
    const said: string[] = [];
    const deploying = subject.deploying === true;
    const what = deploying ? "and its deploys " : "";
    const why = deploying ? "deploying it crashed the server" : "it crashed the server";
    const hold = (book: Map<string, QuarantineEntry>, key: string, kind: string) => {
      const entry = nextQuarantine(book.get(key), now, this.firstMs, deploying);
      book.set(key, entry);
      said.push(`quarantining ${kind} ${key} ${what}for ${(entry.until - now) / 1000} s: ${why}`);
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
      if (crashes.from.size >= 2 || remembered(crashes.entry, now, this.firstMs)) {
        crashes.entry = nextQuarantine(crashes.entry, now, this.firstMs, deploying);
        said.push(
          `quarantining developer ${subject.owner} ${deploying ? "and their deploys " : ""}for ${(crashes.entry.until - now) / 1000} s: ${crashes.from.size} of their deployments crashed the server lately`,
        );
      }
    }
    return said;
  }

  /** The quarantines in force at `now`, for a server process starting; forgets what no longer matters. */
  handOver(now: number): QuarantineList {
    const list: QuarantineList = { calls: noneHeld(), deploys: noneHeld() };
    const inForce = (entry: QuarantineEntry | undefined, kind: keyof HeldKinds, key: string) => {
      if (entry && entry.until > now) list.calls[kind][key] = entry.until;
      if (entry && entry.deploysUntil > now) list.deploys[kind][key] = entry.deploysUntil;
    };
    for (const [kind, book] of [
      ["bundles", this.bundles],
      ["deployments", this.deployments],
    ] as const)
      for (const [key, entry] of book) {
        inForce(entry, kind, key);
        if (!remembered(entry, now, this.firstMs)) book.delete(key);
      }
    for (const [owner, crashes] of this.owners) {
      inForce(crashes.entry, "owners", owner);
      for (const [from, at] of crashes.from) if (now - at > LIMITS.quarantineMaxMs) crashes.from.delete(from);
      if (crashes.from.size === 0 && !remembered(crashes.entry, now, this.firstMs)) this.owners.delete(owner);
    }
    return list;
  }
}
