import { performance } from "node:perf_hooks";
import { LIMITS } from "../sdk/protocol/index.js";

/**
 * Overrides {@link LIMITS.serverSilenceMs} in the supervisor (ms), so a test need not wait 10 s
 * for a stopped server process to be replaced. Operators leave it unset.
 */
export const SERVER_SILENCE_ENV = "PLATFORM_SERVER_SILENCE_MS";

/** Between being told to start and listening, a server opens the database: allow it this many times the silence. */
const START_SILENCE_FACTOR = 6;

/** What the watch reads of one server process (see cli/supervisor.ts). */
export interface WatchedServer {
  /** Told to start. */
  activated: boolean;
  /** Listens. */
  ready: boolean;
}

/** The watch as the supervisor uses it. */
export interface SilenceWatch<T> {
  /** How often (ms) a server process is asked to send its heartbeat. */
  readonly heartbeatMs: number;
  /** Notes a line from `server`; its first line (`standby`, its modules loaded) starts the watch. */
  heard(server: T): void;
}

/** The silence allowed: {@link LIMITS.serverSilenceMs}, or a positive {@link SERVER_SILENCE_ENV}. */
export function serverSilenceMs(env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = Number(env[SERVER_SILENCE_ENV]);
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : LIMITS.serverSilenceMs;
}

/**
 * Watches the server processes that `servers` lists for liveness: one whose last line on the
 * supervisor channel is older than `silenceMs` (six times that while it starts) is handed to
 * `silent`, once, which kills it; its exit is then handled as any crash. Lines are the proof
 * because the server writes its heartbeat from a timer on its main thread, which a deadlock, an
 * endless loop or a SIGSTOP silences, while a draining or busy server keeps turning its event loop.
 * Before its first line a process is loading modules and is not watched. Time is the monotonic
 * clock, and a check that itself ran late (the supervisor was held up, its pipes unread) restarts
 * every server's count instead of blaming them.
 */
export function watchSilence<T extends WatchedServer>(
  servers: () => Iterable<T | undefined>,
  silent: (server: T, limitMs: number) => void,
  silenceMs: number = serverSilenceMs(),
): SilenceWatch<T> {
  const heardAt = new WeakMap<T, number>();
  const given = new WeakSet<T>();
  const heartbeatMs = Math.max(1, Math.round(silenceMs / 10));
  let checkedAt = performance.now();
  setInterval(() => {
    const now = performance.now();
    const late = now - checkedAt > silenceMs / 2;
    checkedAt = now;
    for (const server of servers()) {
      const at = server === undefined ? undefined : heardAt.get(server);
      if (server === undefined || at === undefined || given.has(server)) continue;
      if (late) {
        heardAt.set(server, now);
        continue;
      }
      const limitMs = server.activated && !server.ready ? silenceMs * START_SILENCE_FACTOR : silenceMs;
      if (now - at <= limitMs) continue;
      given.add(server);
      silent(server, limitMs);
    }
  }, heartbeatMs).unref();
  return { heartbeatMs, heard: (server) => heardAt.set(server, performance.now()) };
}
