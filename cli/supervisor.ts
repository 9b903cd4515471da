import { type ChildProcess, spawn } from "node:child_process";
import { lookup } from "node:dns/promises";
import net from "node:net";
import { createInterface } from "node:readline";
import { getSystemErrorName } from "node:util";
// The supervisor loads only these two small modules of the host, never isolated-vm.
import { QuarantineBook } from "../host/deployments/quarantine-book.js";
import {
  type CrashSubject,
  parseSupervisorLine,
  SUPERVISOR_FD_ENV,
  SUPERVISOR_HEARTBEAT_ENV,
} from "../host/isolates/crash-record.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { listenFailure } from "./listen-failure.js";
import { watchSilence } from "./server-silence.js";

/** Where the supervisor listens, and what each server process gets in its environment. */
export interface SupervisorOptions {
  port: number;
  hostname: string;
  env: Record<string, string>;
  /** The first quarantine of code that crashed the server (ms; default {@link LIMITS.quarantineFirstMs}). */
  quarantineFirstMs?: number;
}

/** A bound TCP socket handle (node:net's own, the one its cluster module shares with workers). */
interface ServerHandle {
  readonly fd: number;
  /** Fills `out` with the bound address; answers 0 or a negative errno. */
  getsockname(out: object): number;
  close(): void;
}

const netInternals = net as unknown as {
  _createServerHandle(address: string, port: number, family: number): ServerHandle | number;
};

/** The server process's descriptors: 3 the listening socket, 4 the supervisor channel, 5 IPC. */
const LISTEN_FD = 3;
const CHANNEL_FD = 4;

/** Back-off between server processes that fail to start (ms): 200, 400, 800, ... */
const START_RETRY_MS = 200;

/**
 * Binds the host's address once, in the supervisor. The socket is put in listening state by each
 * server process (which inherits it); the supervisor never accepts on it but keeps it open, so
 * while one server process is replaced, new connections wait in the socket's backlog instead of
 * being refused.
 */
async function bindSocket(hostname: string, port: number): Promise<ServerHandle> {
  const { address, family } = await lookup(hostname);
  const handle = netInternals._createServerHandle(address, port, family);
  // libuv defers a bind's EADDRINUSE to the socket's next call; asking for the address surfaces
  // it here. Unchecked, a server process would listen on the unbound socket: on a random port.
  const error = typeof handle === "number" ? handle : handle.getsockname({});
  if (error !== 0) {
    if (typeof handle !== "number") handle.close();
    throw listenFailure(hostname, port, getSystemErrorName(error));
  }
  return handle as ServerHandle;
}

/** One server process and what it said on the supervisor channel. */
interface Server {
  process: ChildProcess;
  /** Its modules are loaded: it waits to be told to start. */
  loaded: boolean;
  /** Told to start (it is the active server). */
  activated: boolean;
  ready: boolean;
  /** Whose code it said crashed it. */
  crashed: CrashSubject[];
}

/**
 * `platform host` as operators run it: this process owns the listening socket and runs the server
 * in a child process. A spare server process waits with its modules loaded (loading them takes
 * seconds on a busy machine), so when the active one dies the spare opens the database and serves
 * at once, and a new spare is started. A catastrophic V8 error in one isolate ends the server
 * process; the server reports the bundle that caused it, with its deployment and developer (see
 * host/isolates/crash-record.ts), and the supervisor hands every server it starts what it
 * quarantined for it (see quarantine-book.ts), each for {@link LIMITS.quarantineFirstMs} doubling
 * on repeat. A server whose main thread is blocked (or that is
 * stopped) sends no heartbeat: after {@link LIMITS.serverSilenceMs} the supervisor kills it, and
 * replaces it as one that crashed (cli/server-silence.ts). A server that exits before it listens
 * counts as a failed start: after {@link LIMITS.serverStartAttempts} in a row the supervisor stops.
 */
export async function supervise(options: SupervisorOptions): Promise<void> {
  const socket = await bindSocket(options.hostname, options.port);
  const quarantined = new QuarantineBook(options.quarantineFirstMs);
  let active: Server | undefined;
  let spare: Server | undefined;
  let stopping = false;
  let failedStarts = 0;
  /** Active servers replaced so far; each server is told the count (its restarts metric). */
  let restarts = 0;

  const activate = (server: Server) => {
    active = server;
    if (spare === server) spare = undefined;
    if (!server.loaded || server.activated) return;
    server.activated = true;
    server.process.send({ quarantine: quarantined.handOver(Date.now()), restarts });
  };
  const failed = (how: string) => {
    if (++failedStarts < LIMITS.serverStartAttempts) return false;
    process.stderr.write(
      `platform host: the server failed to start ${failedStarts} times in a row (last: ${how}); stopping. See the errors above.\n`,
    );
    stopAll();
    process.exit(1);
  };
  const silence = watchSilence(
    () => [active, spare],
    (server, limitMs) => {
      process.stderr.write(
        `platform host: server process ${server.process.pid} sent no heartbeat for ${limitMs / 1000} s (its main thread is blocked, or it is stopped); killing it\n`,
      );
      server.process.kill("SIGKILL");
    },
  );
  const stopAll = () => {
    for (const server of [active, spare])
      if (server && server.process.exitCode === null && server.process.signalCode === null)
        server.process.kill("SIGTERM");
  };

  const spawnServer = (): Server => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, process.argv[1] as string, ...process.argv.slice(2)],
      {
        stdio: ["inherit", "inherit", "inherit", socket.fd, "pipe", "ipc"],
        env: {
          ...process.env,
          ...options.env,
          PLATFORM_HOST_CHILD: "1",
          PLATFORM_LISTEN_FD: String(LISTEN_FD),
          [SUPERVISOR_FD_ENV]: String(CHANNEL_FD),
          [SUPERVISOR_HEARTBEAT_ENV]: String(silence.heartbeatMs),
        },
      },
    );
    const server: Server = {
      process: child,
      loaded: false,
      activated: false,
      ready: false,
      crashed: [],
    };
    const channel = child.stdio[CHANNEL_FD];
    if (channel && "on" in channel)
      createInterface({ input: channel as NodeJS.ReadableStream }).on("line", (line) => {
        silence.heard(server);
        const message = parseSupervisorLine(line);
        if (message?.kind === "standby") {
          server.loaded = true;
          if (active === server) activate(server);
        } else if (message?.kind === "ready") {
          server.ready = true;
          failedStarts = 0;
          if (!spare && !stopping) spare = spawnServer();
        } else if (message?.kind === "crash") server.crashed.push(message);
      });
    // "close": after the exit and after the channel is read to its end (the crash line included).
    child.on("close", (code, signal) => exited(server, signal ?? `code ${code}`));
    return server;
  };

  const exited = (server: Server, how: string) => {
    if (stopping) {
      if (server === active) process.exit(0);
      return;
    }
    const now = Date.now();
    for (const subject of server.crashed)
      for (const line of quarantined.record(subject, now)) process.stderr.write(`platform host: ${line}\n`);
    if (server === spare) {
      // A spare that dies is a failed start too; the next one is started after the back-off.
      spare = undefined;
      if (!failed(how))
        setTimeout(
          () => {
            if (!stopping) spare ??= spawnServer();
          },
          START_RETRY_MS * 2 ** failedStarts,
        );
      return;
    }
    if (server !== active) return;
    if (!server.ready && failed(how)) return;
    const delay = server.ready ? 0 : START_RETRY_MS * 2 ** (failedStarts - 1);
    process.stderr.write(`platform host: server exited (${how}); restarting in ${delay} ms\n`);
    active = undefined;
    restarts++;
    // The socket is closed once stopping: no server is started on it any more.
    setTimeout(() => stopping || activate(spare ?? spawnServer()), delay);
  };

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      // The server drains (see cli/commands/host.ts); once it and the spare have let go of the
      // socket too, new connections are refused, so a balancer sends them to another host.
      socket.close();
      const running = active && active.process.exitCode === null && active.process.signalCode === null;
      stopAll();
      if (!running) process.exit(0);
    });
  }
  activate(spawnServer());
}
