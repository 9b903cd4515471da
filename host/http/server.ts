import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import type { AuthService, Developers } from "../auth/index.js";
import { DataConsole, type DeploymentService } from "../deployments/index.js";
import type { HostMetrics } from "../metrics/index.js";
import type { ObjectService } from "../storage/index.js";
import type { DeploymentTransfer } from "../transfer/index.js";
import { appRoutes } from "./app-routes.js";
import { authRoutes, type SignInMethods } from "./auth-routes.js";
import { backupRoutes } from "./backup-routes.js";
import { BodyArrivals, countBodyArrivals } from "./body-arrivals.js";
import { reportStreamErrors } from "./client-gone.js";
import { clientRoutes } from "./client-routes.js";
import { controlPlaneCompression } from "./compression.js";
import { type ConnectionLimit, perAddressConnections } from "./connection-cap.js";
import { controlPlaneRoutes } from "./control-plane.js";
import { dashboardRoutes } from "./dashboard.js";
import { DashboardSessions } from "./dashboard-sessions.js";
import { endpointRoutes } from "./endpoint-routes.js";
import { errorEnvelope } from "./errors.js";
import { devTransferRoutes } from "./export-routes.js";
import { healthRoutes } from "./health.js";
import { controlPlaneLanding, devLanding } from "./landing.js";
import { devLogRoutes } from "./log-stream.js";
import { chargeLookups } from "./lookup-charge.js";
import { metricsRoutes } from "./metrics.js";
import type { RequestQuota } from "./request-quota.js";
import { staticFiles } from "./static-files.js";
import { storageRoutes } from "./storage-routes.js";
import { atOrigin, resolveTenant } from "./tenant.js";
import { TokenGuesses } from "./token-guesses.js";
import { UnsentAnswers } from "./unsent-answers.js";

/** How the HTTP server routes requests. */
export interface HttpOptions {
  /** Bytes of request bodies arriving at once (default: LIMITS' for `quota`). */
  bodyArrivals?: BodyArrivals;
  /** Bytes of answers waiting to be read (default: LIMITS' for `quota`). */
  unsentAnswers?: UnsentAnswers;
  deployments: DeploymentService;
  auth: AuthService;
  developers: Developers;
  signIn: SignInMethods;
  /** `platform dev`: the capsule's client build and `client/` folder, served at the app origin. */
  devClientDirs?: string[];
  objects: ObjectService;
  /** Export and import of deployments (operator API; `platform dev`: the local deployment's). */
  transfer: DeploymentTransfer;
  /** Control plane at `<domain>`, deployments at `<id>.<domain>`. */
  domain: string;
  /** `platform dev`: every request goes to this deployment; no control plane. */
  devDeployment?: string;
  /** The operator's bearer token (required unless `devDeployment` is set). */
  adminToken?: string;
  /** Per-caller request quotas. */
  quota: RequestQuota;
  /** The host is reachable only through one reverse proxy (`platform host --trust-proxy`). */
  trustProxy?: boolean;
  /** The host's metrics, served to the operator at the control plane's `GET /metrics`. */
  metrics: HostMetrics;
  /** Where internal errors are reported. */
  onInternalError?: (error: unknown) => void;
  /**
   * True once the host shuts down: `/readyz` fails and every response closes its connection, so
   * a balancer's kept-alive connections end and new requests go to another host.
   */
  draining?: () => boolean;
}

/** A running HTTP server. */
export interface RunningServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/**
 * Builds the Koa app by composition only: the error sink, tenant resolution, then each origin's
 * route files in the order they claim paths. A deployment origin tries sign-in, (dev) logs, the
 * data API, storage, the capsule's endpoints, its client files (dev: from the folders; hosted: as
 * deployed) and (dev) a landing page at `/`;
 * the control plane tries the health probes, the operator API, the dashboard, then its landing page. Whatever
 * nothing answers is `404 not_found`.
 */
export function createHttpApp(options: HttpOptions): Koa {
  const app = new Koa();
  app.proxy = false;
  reportStreamErrors(app, options.onInternalError ?? ((error) => console.error(error)));
  const dev = options.devDeployment !== undefined;
  const { deployments, auth, developers, objects, quota } = options;
  countBodyArrivals(app.context, options.bodyArrivals ?? BodyArrivals.forHost(quota));
  const draining = options.draining ?? (() => false);
  // Tokens refused where the operator's is taken, per address (dashboard sign-ins among them).
  const guesses = new TokenGuesses(quota);
  const deploymentRoutes = [
    authRoutes(auth, deployments, dev, options.signIn, quota),
    options.devDeployment ? devLogRoutes(deployments.logs) : undefined,
    options.devDeployment ? devTransferRoutes(options.transfer) : undefined,
    appRoutes(deployments, auth, quota),
    storageRoutes(
      deployments,
      auth,
      objects,
      developers,
      options.adminToken ?? "",
      dev,
      quota,
      guesses,
      options.trustProxy ?? false,
    ),
    endpointRoutes(deployments, auth, quota),
    options.devDeployment
      ? options.devClientDirs
        ? staticFiles(options.devClientDirs)
        : undefined
      : clientRoutes(deployments, quota),
    options.devDeployment ? devLanding(deployments, options.devDeployment) : undefined,
  ];
  const sessions = options.adminToken
    ? new DashboardSessions(deployments.db, developers, options.adminToken, options.trustProxy)
    : undefined;
  const controlRoutes =
    options.adminToken && sessions
      ? [
          healthRoutes(deployments.db, objects.blobs, draining),
          metricsRoutes(options.metrics, options.adminToken, developers, guesses),
          backupRoutes({ db: deployments.db, deployments, objects }, options.adminToken, developers, guesses),
          controlPlaneRoutes(
            deployments,
            auth,
            developers,
            objects,
            options.adminToken,
            options.transfer,
            sessions,
            new DataConsole(deployments.db, deployments.logs),
            guesses,
            quota,
          ),
          dashboardRoutes(sessions, deployments, objects, guesses, dev),
          controlPlaneLanding(),
        ]
      : [];
  app.use(closeWhen(draining));
  app.use(errorEnvelope(options.onInternalError ?? ((error) => console.error(error))));
  app.use((options.unsentAnswers ?? UnsentAnswers.forHost(quota)).middleware());
  app.use(
    resolveTenant({
      domain: options.domain,
      devDeployment: options.devDeployment,
      controlPlane: controlRoutes.length > 0,
    }),
  );
  app.use(chargeLookups(deployments, quota));
  app.use(controlPlaneCompression());
  for (const routes of deploymentRoutes) if (routes) app.use(atOrigin("deployment", routes));
  for (const routes of controlRoutes) app.use(atOrigin("control", routes));
  return app;
}

/**
 * Answers with `Connection: close` while the host drains (see {@link HttpOptions.draining}), and
 * when the answer comes before the request's body was received (a refusal of a large upload):
 * kept alive, the connection would go on receiving and discarding whatever the client still sends.
 */
function closeWhen(draining: () => boolean): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      if (draining() || !ctx.req.complete) ctx.set("Connection", "close");
    }
  };
}

/**
 * Starts the HTTP server on `port` (0 picks a free one) on loopback or `hostname`, or on the
 * inherited listening socket `fd` (a supervisor's, which outlives this process: connections wait
 * in its backlog while no server runs, instead of being refused). With `limit`, a connection past
 * `limit.maxConnections` is closed as soon as it is accepted (see connection-cap.ts).
 */
export async function listen(
  app: Koa,
  port: number,
  hostname = "127.0.0.1",
  fd?: number,
  limit?: ConnectionLimit,
): Promise<RunningServer> {
  const server = createServer(app.callback());
  server.keepAliveTimeout = 5000;
  if (limit && Number.isFinite(limit.maxConnections)) {
    server.maxConnections = limit.maxConnections;
    server.on("drop", limit.dropped);
  }
  if (limit?.addressKey) server.on("connection", perAddressConnections(limit.addressKey, limit.dropped));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (fd !== undefined) server.listen({ fd }, () => resolve());
    else server.listen(port, hostname, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        // After a drain it stopped listening already (its close event has passed).
        if (server.listening) server.close(() => resolve());
        else resolve();
      }),
  };
}
