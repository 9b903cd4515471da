import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { DestinationStream } from "pino";
import { LIMITS } from "../sdk/protocol/index.js";
import { AuthService, Developers, type OidcIssuer, type UnsentCode } from "./auth/index.js";
import { type DatabaseQuota, HostDatabase, PostgresKv } from "./db/index.js";
import { DeploymentService, LogHub, quarantine } from "./deployments/index.js";
import { signInMethods } from "./host-sign-in.js";
import { startUpkeep } from "./host-upkeep.js";
import {
  attachSync,
  type BodyArrivalLimits,
  BodyArrivals,
  createHttpApp,
  DEFAULT_REQUEST_QUOTA,
  destinationOfHost,
  drainServer,
  hostConnectionLimit,
  listen,
  listenForMetrics,
  type QuotaSettings,
  RequestQuota,
  type UnsentAnswerLimits,
  UnsentAnswers,
} from "./http/index.js";
import type { PoolOptions } from "./isolates/index.js";
import { LiveQueries } from "./live/index.js";
import { HostMetrics } from "./metrics/index.js";
import { StartedParts } from "./started-parts.js";
import {
  DEFAULT_STORAGE_LIMITS,
  FsBlobStore,
  MemoryBlobStore,
  ObjectService,
  S3BlobStore,
  type S3Settings,
  type StorageLimits,
} from "./storage/index.js";
import { DeploymentTransfer, UploadFolder } from "./transfer/index.js";

/** Options of {@link startHost}. */
export interface HostOptions {
  /** Folder for the embedded database and blobs (created if missing). */
  data: string;
  /**
   * `postgres://...`: the database lives in PostgreSQL, shared with other host processes. Default:
   * embedded classic-level under `data`.
   */
  database?: string;
  /** Object bytes in an S3 (or S3-protocol) bucket, shared with other hosts. Default: files under `data`. */
  s3?: S3Settings;
  port: number;
  domain: string;
  /** Address to listen on (default loopback). */
  hostname?: string;
  /**
   * An inherited listening socket to serve on instead of `port` and `hostname`: `platform host`'s
   * supervisor owns the socket, so it stays open while a crashed server process is replaced.
   */
  listenFd?: number;
  /**
   * Client connections kept at once, sockets of every kind together; past it a new one is closed
   * as it arrives. Default: half of what the open-files limit leaves past the host's own files
   * (host/http/connection-cap.ts).
   */
  maxConnections?: number;
  /** The operator's bearer token for `/v1`. */
  adminToken: string;
  /** `platform dev`: serve this one deployment at every host name, without a control plane. */
  devDeployment?: string;
  pool?: Partial<PoolOptions>;
  /** SMTP transport for sign-in codes (`smtp://...`); without one, codes go to the host log. */
  smtpUrl?: string;
  emailFrom?: string;
  /**
   * Where sign-in codes go without `smtpUrl`, instead of the host log: `platform dev` prints each
   * as one readable line, since a developer reads its terminal, not a JSON log.
   */
  onUnsentCode?: (code: UnsentCode) => void;
  /** OpenID Connect issuers whose ID tokens sign accounts in. */
  oidcIssuers?: OidcIssuer[];
  /** Storage limits (tests use small ones); defaults are {@link DEFAULT_STORAGE_LIMITS}, read from LIMITS. */
  storageLimits?: Partial<StorageLimits>;
  /** Row bytes per deployment (tests use small ones); the default is `LIMITS.rowBytesPerDeployment`. */
  databaseQuota?: Partial<DatabaseQuota>;
  /** Deployments one developer may own (tests use few); the default is `LIMITS.deploymentsPerDeveloper`. */
  deploymentsPerDeveloper?: number;
  /** `platform dev`: serve these folders (the client build, then `client/`) at the app origin. */
  devClientDirs?: string[];
  /**
   * Whether every call's budget line (and budget warnings) is written to the log destination too
   * (default true: an access log); they are kept for `platform logs` either way.
   */
  logCalls?: boolean;
  /**
   * Per-caller request quota (default {@link DEFAULT_REQUEST_QUOTA}); `false` turns it off, and the
   * per-client limits on new guests and sync sockets with it (benchmarks, trusted setups).
   */
  requestQuota?: QuotaSettings | false;
  /**
   * The host is reachable only through one reverse proxy: a client's address is the last entry of
   * `X-Forwarded-For` (default false: the socket's peer, so every client behind a proxy is one),
   * and the last entry of `X-Forwarded-Proto` says whether it came over HTTPS.
   */
  trustProxy?: boolean;
  /** Bytes of request bodies the host receives at once (tests use small ones); defaults from LIMITS. */
  bodyArrivalLimits?: Partial<BodyArrivalLimits>;
  /** Bytes of answers waiting to be read, and for how long (tests use small figures). */
  unsentAnswerLimits?: Partial<UnsentAnswerLimits>;
  /** Where log lines are written as JSON (default: stdout; `false`: nowhere, only kept). */
  logDestination?: DestinationStream | false;
  /** Also serve `GET /metrics` without a token on this port of 127.0.0.1 (0 picks a free one). */
  metricsPort?: number;
  /** Times the supervisor restarted the server process before this one (a metric). */
  serverRestarts?: number;
  /** Add Node's process metrics (CPU, memory, event loop, GC): `platform host` only, once per process. */
  processMetrics?: boolean;
}

/** A running host. */
export interface PlatformHost {
  port: number;
  /** Live queries (subscriptions over `/api/sync`). */
  live: LiveQueries;
  auth: AuthService;
  /** The control plane's base URL. */
  url: string;
  /** The document database (`platform budget` seeds tables through it). */
  database: HostDatabase;
  deployments: DeploymentService;
  /** The host's metrics (served at the control plane's `GET /metrics`). */
  metrics: HostMetrics;
  /** The loopback port serving `GET /metrics` without a token, when {@link HostOptions.metricsPort} was given. */
  metricsPort?: number;
  /** The base URL of deployment `id`. */
  deploymentUrl(id: string): string;
  /**
   * A graceful shutdown's first part (`platform host` on `SIGTERM`): stops accepting connections,
   * fails `/readyz`, finishes the calls in flight (for at most the wall limit of a handler and
   * {@link LIMITS.drainGraceMs}), closes sync sockets with `1012` (the client reconnects
   * elsewhere at once) and flushes the log. Then {@link close}.
   */
  drain(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a host: the database under `data`, the blob store, every deployment's isolates, and the
 * HTTP server. It is the one composition root: `platform host`, `platform dev`, `platform budget`
 * and the tests all build a host through it.
 */
export async function startHost(options: HostOptions): Promise<PlatformHost> {
  const started = new StartedParts();
  return started.run(() => assembleHost(options, started));
}

/** {@link startHost}'s steps; each part that runs until stopped is added to `started`. */
async function assembleHost(options: HostOptions, started: StartedParts): Promise<PlatformHost> {
  // Every tenant's rows, files and sessions: no other user of the machine may read them.
  await mkdir(options.data, { recursive: true, mode: 0o700 });
  const db = await HostDatabase.open(options.database ?? join(options.data, "db"), options.databaseQuota);
  started.add(() => db.close());
  const logs = new LogHub(options.logDestination, options.logCalls ?? true);
  const metrics = new HostMetrics({
    serverRestarts: options.serverRestarts,
    processMetrics: options.processMetrics,
  });
  // The host's own code caches live in its data directory, where no tenant input is written.
  const pool = { codeCacheDir: join(options.data, "code-cache"), ...options.pool };
  const deployments = new DeploymentService(db, logs, pool, metrics, options.deploymentsPerDeveloper);
  started.add(() => deployments.close());
  const stopForgetting = deployments.onGone((id) => metrics.forget(id));
  const auth = await AuthService.open(db, (id) => deployments.incarnationOf(id));
  const developers = new Developers(db);
  const signIn = signInMethods(db, logs, options);
  const blobs = options.devDeployment
    ? new MemoryBlobStore()
    : options.s3
      ? await S3BlobStore.open(options.s3)
      : await FsBlobStore.open(join(options.data, "blobs"));
  if (blobs instanceof S3BlobStore) started.add(() => blobs.close());
  const objects = new ObjectService(
    db,
    blobs,
    (id) => deployments.quotaOwnerOf(id),
    Object.assign({}, DEFAULT_STORAGE_LIMITS, options.storageLimits),
  );
  deployments.purgeOnRemoval(objects);
  deployments.purgeOnRemoval(auth);
  await deployments.finishRemovals();
  const transfer = new DeploymentTransfer(
    db,
    deployments,
    objects,
    new UploadFolder(join(options.data, "import-uploads")),
  );
  await transfer.finishUnfinished((id, error) =>
    logs.write({
      time: new Date().toISOString(),
      level: "error",
      deployment: id,
      handler: "import",
      platform: true,
      requestId: "-",
      message: `Cleaning up after an interrupted import is unfinished; the next start or import retries: ${String(error)}`,
    }),
  );
  const quota = new RequestQuota(options.requestQuota ?? DEFAULT_REQUEST_QUOTA, options.trustProxy ?? false);
  const bodyArrivals = BodyArrivals.forHost(quota, options.bodyArrivalLimits);
  const unsentAnswers = UnsentAnswers.forHost(quota, options.unsentAnswerLimits);
  let draining = false;
  const app = createHttpApp({
    draining: () => draining,
    quota,
    trustProxy: options.trustProxy ?? false,
    metrics,
    bodyArrivals,
    unsentAnswers,
    ...(options.devClientDirs ? { devClientDirs: options.devClientDirs } : {}),
    objects,
    transfer,
    signIn,
    deployments,
    auth,
    developers,
    domain: options.domain,
    adminToken: options.adminToken,
    ...(options.devDeployment ? { devDeployment: options.devDeployment } : {}),
  });
  const dropped = () => metrics.connectionDropped();
  const perAddress = quota.enabled && !options.trustProxy;
  const limit = hostConnectionLimit(options.maxConnections, perAddress, dropped);
  const running = await listen(app, options.port, options.hostname, options.listenFd, limit);
  started.add(() => running.close());
  const metricsServer =
    options.metricsPort === undefined
      ? undefined
      : await listenForMetrics(metrics, options.metricsPort, (error) => console.error(error));
  if (metricsServer) started.add(() => metricsServer.close());
  const live = new LiveQueries(deployments, metrics);
  started.add(() => live.close());
  const stopUpkeep = startUpkeep({ db, auth, emailCodes: signIn.emailCodes, deployments });
  started.add(stopUpkeep);
  const store = db.store;
  metrics.watch({
    liveIsolates: () => deployments.pool.liveCount(),
    busySlots: () => deployments.pool.busySlots(),
    waitingCalls: () => deployments.pool.waitingCalls(),
    breachedDeployments: () => deployments.pool.breachedDeployments(),
    liveSubscriptions: () => live.subscriberCounts(),
    quarantined: () => quarantine.activeCounts(),
    requestBodyBytesArriving: () => bodyArrivals.arriving,
    codeCache: () => ({ ...deployments.pool.factory.codeCache.counts }),
    storageBytes: (limit) => objects.usageByOwner(limit),
    ...(store instanceof PostgresKv ? { postgresPools: () => store.poolUse() } : {}),
  });
  const sync = attachSync(
    running.server,
    (host) => {
      const destination = destinationOfHost(host, options.domain, options.devDeployment);
      return destination.kind === "deployment" ? destination.id : undefined;
    },
    deployments,
    auth,
    live,
    quota,
    bodyArrivals,
    options.devDeployment !== undefined,
  );
  return {
    port: running.port,
    live,
    url: `http://${options.domain}:${running.port}`,
    database: db,
    deployments,
    auth,
    metrics,
    ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
    deploymentUrl: (id) =>
      options.devDeployment
        ? `http://${options.domain}:${running.port}`
        : `http://${id}.${options.domain}:${running.port}`,
    drain: async () => {
      draining = true;
      await drainServer(running.server, sync, LIMITS.handlerWallMs + LIMITS.drainGraceMs);
      await logs.flush();
    },
    close: async () => {
      sync.stop();
      stopForgetting();
      live.close();
      await metricsServer?.close();
      await running.close();
      await stopUpkeep();
      await deployments.close();
      await db.close();
      if (blobs instanceof S3BlobStore) blobs.close();
    },
  };
}
