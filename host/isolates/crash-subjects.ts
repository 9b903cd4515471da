import type ivm from "isolated-vm";
import { type CrashSubject, crashWords } from "./crash-record.js";

/**
 * Whom an isolate runs code for: the deployment, its owning developer (null: unclaimed; absent:
 * not known), and whether it is a deploy's isolate not yet serving (a crash then came from
 * deploying, which only the deployer can do, rather than from a call anyone may make).
 */
export interface Tenant {
  deployment: string;
  owner?: string | null | undefined;
  deploying?: boolean;
}

/** Whose code each live isolate runs, for the crash reports (isolate-loader's and the inline watchdog's). */
const subjects = new WeakMap<ivm.Isolate, CrashSubject>();

/**
 * Names whose code `isolate` runs from now on: bundle `artifact` for `tenant` (none: not a
 * tenant's). Returns false when that is what it was named already.
 */
export function nameCrashSubject(isolate: ivm.Isolate, artifact: string, tenant?: Tenant): boolean {
  const was = subjects.get(isolate);
  const deploying = tenant?.deploying === true;
  if (
    was?.artifact === artifact &&
    was.deployment === tenant?.deployment &&
    was.owner === tenant?.owner &&
    (was.deploying === true) === deploying
  )
    return false;
  subjects.set(isolate, {
    artifact,
    deployment: tenant?.deployment,
    owner: tenant?.owner,
    ...(deploying ? { deploying: true } : {}),
  });
  return true;
}

/** Whose code `isolate` runs (an empty bundle name when it is not a capsule's). */
export function crashSubjectOf(isolate: ivm.Isolate): CrashSubject {
  return subjects.get(isolate) ?? { artifact: "" };
}

/** The crash line's words for `isolate` (see crash-record.ts); "" when it is not a capsule's. */
export function crashWordsOf(isolate: ivm.Isolate): string {
  const subject = subjects.get(isolate);
  return subject ? crashWords(subject) : "";
}
