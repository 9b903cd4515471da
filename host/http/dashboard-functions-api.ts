import type Router from "@koa/router";
import {
  BUDGETS,
  type CallUsage,
  type FunctionsAnswer,
  LIMITS,
  type RunAnswer,
  type UsageLimits,
} from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { checkFunctionRun, mayWriteData } from "../access/index.js";
import type { AuthService } from "../auth/index.js";
import { type DeploymentRecord, type DeploymentService, formatRequestId } from "../deployments/index.js";
import { readJsonObject } from "./body.js";
import { actorLabel, checkStillSame, managedDeployment } from "./managed-deployment.js";
import { principalOf } from "./principal.js";
import { type ResolvedIdentity, runIdentity } from "./run-identity.js";

/** The per-call limits the runner's figures are shown against. */
const USAGE_LIMITS: UsageLimits = Object.assign({ wallMs: LIMITS.handlerWallMs }, BUDGETS);

/** A run's body: the args (a real call's body limit) with room for the rest. */
const RUN_BODY_BYTES = LIMITS.requestBodyBytes + 4096;

/** The handler a run names: a declared query or mutation of the deployment. */
function handlerOf(record: DeploymentRecord, input: Record<string, unknown>) {
  const { kind, name } = input;
  if (kind !== "query" && kind !== "mutation")
    throw new PlatformError("bad_request", 'kind is "query" or "mutation".');
  if (typeof name !== "string" || name === "") throw new PlatformError("bad_request", "name is required.");
  const declared = kind === "query" ? record.declaration.queries : record.declaration.mutations;
  if (!declared.includes(name))
    throw new PlatformError(
      "not_found",
      `No ${kind} named ${JSON.stringify(name)} in deployment ${record.id}.`,
    );
  return { kind, name } as const;
}

/** The argument as the handler receives it: JSON, within a real call's body limit. */
function argsJsonOf(input: Record<string, unknown>): string {
  const argsJson = input.args === undefined ? "{}" : JSON.stringify(input.args);
  if (Buffer.byteLength(argsJson) > LIMITS.requestBodyBytes)
    throw new PlatformError("too_large", `args are larger than ${LIMITS.requestBodyBytes} bytes.`);
  return argsJson;
}

/** The deployment's log line that a developer ran a handler as someone (never its arguments). */
function logRun(
  deployments: DeploymentService,
  record: DeploymentRecord,
  by: string,
  handler: { kind: string; name: string },
  as: ResolvedIdentity,
): void {
  deployments.logs.write({
    time: new Date().toISOString(),
    level: "info",
    deployment: record.id,
    handler: "dashboard",
    platform: true,
    requestId: formatRequestId(Date.now(), 0),
    message: `dashboard: ${by} ran ${handler.kind} ${handler.name} as ${as.label}`,
    fields: { by, action: "run", kind: handler.kind, name: handler.name, as: as.label },
  });
}

/**
 * The dashboard's function routes on the operator API (also usable with a bearer token): every
 * query, mutation and endpoint by name; per-handler figures of the last hour; and running a query
 * or mutation with JSON arguments as an identity of that deployment, for its owner (the operator
 * only on an unclaimed deployment, the data-editing rule). A run is a real call: the same access
 * policy, validation, budgets, transaction and call log line as one from the app, preceded by a
 * `dashboard` line naming who ran it as whom.
 */
export function registerFunctionRoutes(
  router: Router,
  deployments: DeploymentService,
  auth: AuthService,
): void {
  router.get("/deploys/:id/functions", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    const { queries, mutations, endpoints } = record.declaration;
    ctx.body = {
      deployment: record.id,
      queries: [...queries].sort(),
      mutations: [...mutations].sort(),
      endpoints: endpoints.map(({ name, method, path, readOnly }) => ({ name, method, path, readOnly })),
      runnable: mayWriteData(principalOf(ctx), record),
      limits: USAGE_LIMITS,
    } satisfies FunctionsAnswer;
  });
  router.get("/deploys/:id/stats", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    ctx.body = deployments.logs.stats.summary(record.id);
  });
  router.post("/deploys/:id/run", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    const who = principalOf(ctx);
    checkFunctionRun(who, record);
    const input = await readJsonObject(ctx, RUN_BODY_BYTES);
    const handler = handlerOf(record, input);
    const argsJson = argsJsonOf(input);
    const as = await runIdentity(auth, record.id, input.as);
    // After every await before the call: the deployment checked may have been replaced meanwhile.
    await checkStillSame(deployments, record);
    logRun(deployments, record, actorLabel(who), handler, as);
    let usage: CallUsage | null = null;
    const answer = { limits: USAGE_LIMITS, identity: as.shown };
    try {
      const result = await deployments.call(record.id, {
        kind: handler.kind,
        name: handler.name,
        argsJson,
        identity: as.identity,
        session: null,
        onUsage: (used) => {
          usage = used;
        },
      });
      const rest = JSON.stringify({ usage, ...answer }).slice(1);
      ctx.type = "application/json";
      ctx.body = `{"outcome":"ok","value":${result.valueJson},${rest}`;
    } catch (error) {
      if (!isPlatformError(error)) throw error;
      const message = error.expose ? error.message : "Internal error.";
      ctx.body = {
        outcome: "error",
        error: { code: error.code, message },
        usage,
        ...answer,
      } satisfies RunAnswer;
    }
  });
}
