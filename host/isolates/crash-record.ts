import { writeSync } from "node:fs";

/**
 * The line channel from a supervised server process to its supervisor (`platform host`): a pipe
 * whose descriptor the supervisor names in this environment variable. The server writes `standby`
 * once its modules are loaded, then `alive` every {@link SUPERVISOR_HEARTBEAT_ENV} ms, `ready`
 * once it listens, and `crash <artifact> <deployment> <owner> <deploy|call>` when V8 gives up on
 * the isolate running that bundle (for that deployment, of that developer; `-` where none is
 * known; while deploying it or serving it), just before the process ends. Writes are synchronous, so the line is in the pipe even when the
 * process is killed the next instant; without a supervisor nothing is written.
 */
export const SUPERVISOR_FD_ENV = "PLATFORM_SUPERVISOR_FD";

/**
 * How often (ms) the server writes its `alive` heartbeat, as the supervisor asks in this
 * environment variable; the supervisor kills a server that falls silent (cli/server-silence.ts).
 */
export const SUPERVISOR_HEARTBEAT_ENV = "PLATFORM_SUPERVISOR_HEARTBEAT_MS";

/**
 * Whose code an isolate runs, as a crash names it: the bundle, and the deployment it runs for and
 * that deployment's owning developer when known. The supervisor quarantines each of them, so
 * neither new bundles of one deployment nor new deployments of one developer start afresh.
 */
export interface CrashSubject {
  artifact: string;
  deployment?: string | undefined;
  /** The owning developer's id; null or absent for an unclaimed deployment or none known. */
  owner?: string | null | undefined;
  /** The crash came from deploying (a deploy's isolate, not yet serving), not from a call. */
  deploying?: boolean;
}

/** What one line of the supervisor channel says. */
export type SupervisorMessage = { kind: "standby" | "alive" | "ready" } | ({ kind: "crash" } & CrashSubject);

/**
 * The crash line's words after `crash` for `subject`: bundle, deployment, owner (`-` stands for
 * what is not known) and `deploy` or `call`.
 */
export function crashWords(subject: CrashSubject): string {
  const phase = subject.deploying ? "deploy" : "call";
  return `${subject.artifact} ${subject.deployment || "-"} ${subject.owner || "-"} ${phase}`;
}

/** The supervisor channel's descriptor in this process, or -1 when nothing supervises it. */
export function supervisorFd(): number {
  const fd = Number(process.env[SUPERVISOR_FD_ENV]);
  return Number.isInteger(fd) && fd > 2 ? fd : -1;
}

function writeLine(line: string): void {
  const fd = supervisorFd();
  if (fd < 0) return;
  try {
    writeSync(fd, `${line}\n`);
  } catch {
    // The supervisor is gone; the process ends either way.
  }
}

/**
 * Tells the supervisor the server's modules are loaded (it may be told to start), and from then on
 * that its event loop turns: a timer on the main thread writes `alive`, so a main thread blocked
 * for good (or a stopped process) falls silent. The timer does not keep the process alive.
 */
export function reportStandby(): void {
  writeLine("standby");
  const everyMs = Number(process.env[SUPERVISOR_HEARTBEAT_ENV]);
  if (supervisorFd() >= 0 && everyMs > 0) setInterval(writeLine, everyMs, "alive").unref();
}

/** Tells the supervisor the server listens (start-up succeeded). */
export function reportReady(): void {
  writeLine("ready");
}

/** Tells the supervisor that `subject`'s code crashed the process (synchronously). */
export function reportCrash(subject: CrashSubject): void {
  writeLine(`crash ${crashWords(subject)}`);
}

/** Reads one line of the channel; unknown lines are ignored (undefined). */
export function parseSupervisorLine(line: string): SupervisorMessage | undefined {
  if (line === "standby" || line === "alive" || line === "ready") return { kind: line };
  const crash = /^crash ([\w-]+)(?: ([a-z0-9-]+) ([\w-]+)(?: (deploy|call))?)?$/.exec(line);
  if (!crash) return undefined;
  const [, artifact, deployment, owner, phase] = crash as unknown as [
    string,
    string,
    string?,
    string?,
    string?,
  ];
  return {
    kind: "crash",
    artifact,
    ...(deployment && deployment !== "-" ? { deployment } : {}),
    ...(owner && owner !== "-" ? { owner } : {}),
    ...(phase === "deploy" ? { deploying: true } : {}),
  };
}
