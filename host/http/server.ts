import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import type { AuthService, Developers } from "../auth/index.js";
import type { Deployments } from "../deployments/index.js";
import type { ObjectService } from "../storage/index.js";
import { appRoutes } from "./app-routes.js";
import { authRoutes, type SignInMethods } from "./auth-routes.js";
import { controlPlaneRoutes } from "./control-plane.js";
import { dashboardRoutes } from "./dashboard.js";
import { endpointRoutes } from "./endpoint-routes.js";
import { errorEnvelope } from "./errors.js";
import { streamLogs } from "./log-stream.js";
import type { RequestQuota } from "./request-quota.js";
import { staticFiles } from "./static-files.js";
import { storageRoutes } from "./storage-routes.js";
import { resolveDestination } from "./tenant.js";

/** How the HTTP server routes requests. */
export interface HttpOptions {
  deployments: Deployments;
  auth: AuthService;
  developers: Developers;
  signIn: SignInMethods;
  /** `platform dev`: the capsule's client build and `client/` folder, served at the app origin. */
  devClientDirs?: string[];
  objects: ObjectService;
  /** Control plane at `<domain>`, deployments at `<id>.<domain>`. */
  domain: string;
  /** `platform dev`: every request goes to this deployment; no control plane. */
  devDeployment?: string;
  /** The operator's bearer token (required unless `devDeployment` is set). */
  adminToken?: string;
  /** Per-caller request quotas. */
  quota: RequestQuota;
  /** Where internal errors are reported. */
  onInternalError?: (error: unknown) => void;
}

/** A running HTTP server. */
export interface RunningServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Builds the Koa app: it only composes middleware (errors, tenant resolution, routes). */
export function createHttpApp(options: HttpOptions): Koa {
  const app = new Koa();
  app.proxy = false;
  const onInternal = options.onInternalError ?? ((error) => console.error(error));
  app.use(errorEnvelope(onInternal));
  const appRouter = appRoutes(options.deployments, options.auth, options.quota);
  const authRouter = authRoutes(
    options.auth,
    options.deployments,
    options.devDeployment !== undefined,
    options.signIn,
  );
  const authMiddleware = authRouter.routes();
  const control = options.adminToken
    ? controlPlaneRoutes(
        options.deployments,
        options.auth,
        options.developers,
        options.objects,
        options.adminToken,
      )
    : undefined;
  const appMiddleware = appRouter.routes();
  const endpoints = endpointRoutes(options.deployments, options.auth, options.quota);
  const clientFiles =
    options.devDeployment && options.devClientDirs ? staticFiles(options.devClientDirs) : undefined;
  const storage = storageRoutes(
    options.deployments,
    options.auth,
    options.objects,
    options.developers,
    options.adminToken ?? "",
    options.devDeployment !== undefined,
  );
  const controlMiddleware = control?.routes();
  const dashboard = dashboardRoutes(
    options.deployments.db,
    options.developers,
    options.deployments,
    options.objects,
  ).routes();
  app.use(async (ctx, next) => {
    const destination = resolveDestination(ctx, options.domain, options.devDeployment);
    if (destination.kind === "deployment") {
      ctx.state.deployment = destination.id;
      if (ctx.path.startsWith("/__platform/auth/")) return authMiddleware(ctx as never, next);
      if (options.devDeployment && ctx.method === "GET" && ctx.path === "/__platform/logs") {
        return streamLogs(ctx, options.deployments.logs, destination.id);
      }
      if (ctx.path.startsWith("/api/")) return appMiddleware(ctx as never, next);
      if (ctx.path === "/storage" || ctx.path.startsWith("/storage/") || ctx.path === "/__platform/storage")
        return storage(ctx, next);
      if (clientFiles) return endpoints(ctx, () => clientFiles(ctx, next));
      return endpoints(ctx, next);
    }
    if (destination.kind === "control" && controlMiddleware) {
      if (ctx.path === "/v1" || ctx.path.startsWith("/v1/")) return controlMiddleware(ctx as never, next);
      return dashboard(ctx as never, next);
    }
    throw new PlatformError(
      "not_found",
      `Unknown host ${ctx.get("host")}: deployments are served at <id>.${options.domain}.`,
    );
  });
  return app;
}

/** Starts the HTTP server on `port` (0 picks a free one) on loopback or `hostname`. */
export async function listen(app: Koa, port: number, hostname = "127.0.0.1"): Promise<RunningServer> {
  const server = createServer(app.callback());
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
