import { join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { LIMITS } from "../../sdk/protocol/index.js";
import { exitOnUnhandledErrors } from "../fatal-errors.js";
import { parsePort } from "../flags.js";
import { adminToken, warnIfShared, warnIfShortToken } from "../host-data.js";
import { runAction } from "../output.js";
import { registerHostBackup } from "./host-backup.js";
import {
  BURST_PER_RATE,
  backends,
  type HostFlags,
  parseDatabaseUrl,
  parseIsolateMemory,
  parseIsolateNice,
  parseMainThreadRaise,
  parseQuarantine,
  parseRequestQuota,
  signInSettings,
} from "./host-flags.js";

/** How long a stopping server waits for the host to close after draining (ms). */
const CLOSE_BOUND_MS = 10_000;

/**
 * The server process under the supervisor (see cli/supervisor.ts). It loads the host's modules
 * first and waits as the supervisor's standby until told to start (with what is quarantined),
 * so a replacement for a crashed server opens the database and serves at once. Then it serves on
 * the inherited socket, says which deployments the quarantine stops, and reports it is ready. It
 * ends when the supervisor does.
 */
async function serve(flags: HostFlags): Promise<void> {
  exitOnUnhandledErrors("platform host");
  const supervised = process.send !== undefined;
  const activation = new Promise<unknown>((resolve) => {
    if (supervised) process.once("message", resolve);
    else resolve({});
  });
  process.once("disconnect", () => process.exit(0));
  const { startHost, quarantine, Quarantine, reportStandby, reportReady, mainThreadRaise } = await import(
    "../../host/index.js"
  );
  reportStandby();
  const handedOver = (await activation) as { quarantine?: unknown; restarts?: unknown };
  const restarts = Number.isInteger(handedOver.restarts) ? (handedOver.restarts as number) : 0;
  quarantine.replace(Quarantine.parse(handedOver.quarantine));
  const data = resolve(flags.data);
  const { token } = adminToken(data);
  const listenFd = Number(process.env.PLATFORM_LISTEN_FD);
  const host = await startHost({
    data,
    ...(Number.isInteger(listenFd) && listenFd > 2 ? { listenFd } : {}),
    port: flags.port,
    domain: flags.domain,
    hostname: flags.hostname,
    adminToken: token,
    ...(flags.requestQuota === undefined ? {} : { requestQuota: flags.requestQuota }),
    ...(flags.trustProxy ? { trustProxy: true } : {}),
    ...backends(flags),
    ...signInSettings(),
    serverRestarts: restarts,
    processMetrics: true,
    ...(flags.metricsPort === undefined ? {} : { metricsPort: flags.metricsPort }),
    pool: {
      ...(flags.isolateNice === undefined ? {} : { isolateThreadNice: flags.isolateNice }),
      ...(flags.isolateMemory === undefined ? {} : { maxHeapBytes: flags.isolateMemory }),
      ...(flags.mainThreadRaise === undefined ? {} : { mainThreadNiceRaise: flags.mainThreadRaise }),
    },
  });
  process.stdout.write(
    `platform host listening: control plane ${host.url}, deployments at http://<id>.${flags.domain}:${host.port}\n`,
  );
  if (host.metricsPort !== undefined)
    process.stdout.write(`platform host metrics: http://127.0.0.1:${host.metricsPort}/metrics (no token)\n`);
  const { asked, raised } = mainThreadRaise();
  if (raised < asked)
    process.stderr.write(
      `platform host: the main thread runs at ${raised} of ${asked} nice values above isolates' threads: give the process CAP_SYS_NICE (or RLIMIT_NICE, e.g. systemd LimitNICE=-${asked}) so requests do not wait for a core behind tenants computing on their threads (docs/operators.md)\n`,
    );
  reportReady();
  let stopping = false;
  // SIGTERM (and SIGINT) drain first: no new connections, calls in flight answered, sync sockets
  // told to reconnect elsewhere, the log flushed; then exit 0 (see docs/operators.md).
  const stop = async (graceful: boolean) => {
    if (stopping) return;
    stopping = true;
    if (graceful) {
      process.stderr.write("platform host: draining: finishing calls in flight, then stopping\n");
      await host.drain();
    }
    // Everything acknowledged is committed by now; a close that hangs (a pool waiting on a lost
    // connection, say) must not keep a stopping host alive, so it gets a bound of its own.
    const closed = await Promise.race([
      host.close().then(() => true),
      new Promise<false>((resolve) => setTimeout(resolve, CLOSE_BOUND_MS, false).unref()),
    ]);
    if (!closed)
      process.stderr.write(`platform host: closing took over ${CLOSE_BOUND_MS / 1000} s; exiting\n`);
    process.exit(0);
  };
  process.once("SIGTERM", () => stop(true));
  process.once("SIGINT", () => stop(true));
  process.removeAllListeners("disconnect");
  process.once("disconnect", () => stop(false));
  if (quarantine.holdsAny)
    for (const record of await host.deployments.list()) {
      const held = quarantine.held(record);
      if (held)
        process.stderr.write(
          `platform host: quarantined deployment ${record.id} until ${new Date(held.until).toISOString()}: ${held.why === "owner" ? `deployments of developer ${record.owner} crashed` : "a request to it crashed"} the server\n`,
        );
    }
}

/** Starts the supervisor, which runs the server in child processes (see cli/supervisor.ts). */
async function superviseHost(flags: HostFlags): Promise<void> {
  const data = resolve(flags.data);
  const { token, generated } = adminToken(data);
  warnIfShortToken();
  warnIfShared(data);
  if (generated)
    process.stdout.write(`Generated an operator token (kept in ${join(data, "admin-token")}):\n  ${token}\n`);
  const { supervise } = await import("../supervisor.js");
  await supervise({
    port: flags.port,
    hostname: flags.hostname,
    env: { PLATFORM_ADMIN_TOKEN: token },
    ...(flags.quarantine === undefined ? {} : { quarantineFirstMs: flags.quarantine }),
  });
}

/** `platform host`: the multi-tenant host, supervised. */
export function registerHost(program: Command): void {
  const host = program.command("host");
  registerHostBackup(host);
  host
    .description(
      "run the multi-tenant host: control plane at http://<domain>:<port>, deployments at http://<id>.<domain>:<port>",
    )
    .addOption(new Option("--port <port>", "port to listen on").default(8080).argParser(parsePort))
    .option("--data <dir>", "data folder (database, operator token)", "./data")
    .option("--domain <domain>", "domain the deployments live under", "localhost")
    .option("--hostname <address>", "address to bind", "127.0.0.1")
    .addOption(
      new Option(
        "--database <url>",
        "a postgres:// URL: the database in PostgreSQL, shared with other hosts",
      ).argParser(parseDatabaseUrl),
    )
    .option(
      "--s3-bucket <name>",
      "keep uploaded files in this S3 (or S3-protocol) bucket instead of under --data",
    )
    .option("--s3-endpoint <url>", "the S3-protocol server (default: AWS); path-style URLs")
    .option("--s3-region <region>", "the bucket's region (default us-east-1)")
    .addOption(
      new Option(
        "--request-quota <n>",
        `requests per second per caller and deployment, bursts of ${BURST_PER_RATE}n (default ${LIMITS.requestQuotaPerSecond}; 0 turns quotas off)`,
      ).argParser(parseRequestQuota),
    )
    .option(
      "--trust-proxy",
      "the host is reachable only through one reverse proxy: a client's address (for per-client limits) is the last entry of X-Forwarded-For, and the dashboard's cookie is Secure when the last entry of X-Forwarded-Proto is https",
    )
    .addOption(
      new Option(
        "--metrics-port <port>",
        "also serve GET /metrics without a token on this port of 127.0.0.1 (the control plane's needs the operator token)",
      ).argParser(parsePort),
    )
    .addOption(
      new Option(
        "--isolate-nice <n>",
        "nice value of isolates' threads (Linux, 0-19; default 0, the host's priority): above 0, tenants computing on their own threads slow every other tenant less (lowered further while more than two are busy), but on a machine busy with other work tenants churning memory can stall the host for seconds (docs/security.md)",
      ).argParser(parseIsolateNice),
    )
    .addOption(
      new Option(
        "--isolate-memory <MiB>",
        "the most the live isolates' heaps may hold together (default: half the machine's memory): past it, idle isolates are evicted, those of the developer whose isolates hold most first (docs/operators.md)",
      ).argParser(parseIsolateMemory),
    )
    .addOption(
      new Option(
        "--main-thread-raise <n>",
        `nice values the main thread (which reads and answers every request) runs above the threads of tenants' code (Linux, 0-19; default ${LIMITS.mainThreadNiceRaise}; needs CAP_SYS_NICE or RLIMIT_NICE): requests do not wait for a core behind tenants computing on their threads. 0 on a machine whose cores the host shares with its database, which the raised thread would otherwise be favoured over (docs/operators.md)`,
      ).argParser(parseMainThreadRaise),
    )
    .addOption(
      new Option(
        "--quarantine <seconds>",
        `how long code that crashed the server is refused the first time: its bundle, its deployment, and its developer once two of theirs did (default ${LIMITS.quarantineFirstMs / 1000}; doubled on each repeat, up to ${LIMITS.quarantineMaxMs / 1000})`,
      ).argParser(parseQuarantine),
    )
    .addHelpText(
      "after",
      '\nExamples:\n  PLATFORM_ADMIN_TOKEN=$(openssl rand -hex 32) platform host --port 8080 --data ./data\n  curl -H "Authorization: Bearer $PLATFORM_ADMIN_TOKEN" http://localhost:8080/v1/deploys\n  platform host --port 8081 --database postgres://platform@db:5432/platform --s3-bucket files --s3-endpoint http://minio:9000',
    )
    .action((flags: HostFlags) =>
      runAction(async () => {
        // Bad values are refused before the supervisor starts anything (exit 2, as commander's own).
        backends(flags);
        signInSettings();
        if (process.env.PLATFORM_HOST_CHILD === "1") await serve(flags);
        else await superviseHost(flags);
      }),
    );
}
