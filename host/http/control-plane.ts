import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import {
  checkClaimant,
  checkManage,
  checkNewDeploymentId,
  mayManage,
  type OperatorCaller,
  OWNER_DELETE,
  ownerOfNewDeployment,
} from "../access/index.js";
import type { AuthService, Developers } from "../auth/index.js";
import type { MigrationProgress } from "../db/index.js";
import { OwnerLimit } from "../db/kv/owner-limit.js";
import {
  type ClientFileInput,
  checkDeploymentId,
  type DataConsole,
  type DeploymentRecord,
  type DeploymentService,
  publicView,
} from "../deployments/index.js";
import { checkObjectId, type ObjectService } from "../storage/index.js";
import type { DeploymentTransfer } from "../transfer/index.js";
import { readJsonObject, SMALL_BODY_BYTES } from "./body.js";
import { chargeCaller } from "./caller-quota.js";
import { registerDataRoutes } from "./dashboard-api.js";
import { registerFunctionRoutes } from "./dashboard-functions-api.js";
import { registerStorageRoutes } from "./dashboard-storage-api.js";
import { createsOnly, replacesOnly, stillSpokenFor } from "./deploy-guards.js";
import { DeployStarts } from "./deploy-starts.js";
import { registerDeveloperRoutes } from "./developer-routes.js";
import { registerTransferRoutes } from "./export-routes.js";
import { jsonListBody, OpenListings } from "./json-list.js";
import { streamLogs } from "./log-stream.js";
import { streamOutcome } from "./ndjson-outcome.js";
import { listView, withOwners } from "./owner-view.js";
import {
  callerKey,
  principalOf,
  principalStillLive,
  resolvePrincipal,
  type SessionLookup,
} from "./principal.js";
import { RequestQuota } from "./request-quota.js";
import { ownPaths } from "./routing.js";
import type { TokenGuesses } from "./token-guesses.js";

const principal = principalOf;

/** The operator may manage any deployment; a developer only the ones they own. */
async function manageable(
  ctx: Context,
  deployments: DeploymentService,
  rawId: unknown,
): Promise<DeploymentRecord> {
  const record = await deployments.require(checkDeploymentId(rawId));
  checkManage(principal(ctx), record);
  return record;
}

/** Operator API bodies are small JSON objects, read inside each route after its access check. */
function body(ctx: Context, limit = SMALL_BODY_BYTES): Promise<Record<string, unknown>> {
  return readJsonObject(ctx, limit);
}

/**
 * A deploy body carries the bundle, its web client in base64 (4 bytes per 3) and `env`, with 1 MiB
 * for JSON escaping, paths and env; each part's own limit is checked by the deploy, with its name.
 */
const DEPLOY_BODY_BYTES = LIMITS.bundleBytes + Math.ceil(LIMITS.clientBytes / 3) * 4 + 1024 * 1024;

/** What a deploy body may hold. */
interface DeployBody {
  code: string;
  env?: Record<string, string>;
  client?: ClientFileInput[];
  id?: string;
  owner?: string;
}

/** A deploy body, parsed off the main thread when large, in its caller's turn (see readJsonObject). */
async function deployBody(ctx: Context): Promise<DeployBody> {
  const value = await readJsonObject(ctx, DEPLOY_BODY_BYTES, callerKey(ctx), true);
  if (typeof value.code !== "string")
    throw new PlatformError(
      "bad_request",
      "A deploy needs { code: <bundle>, env?: {...}, client?: [{ path, data: <base64> }] }.",
    );
  return value as unknown as DeployBody;
}

/**
 * The owner of a deployment `who` creates: a developer's own id, or for the operator the
 * developer its body names, who must exist (else nobody could ever manage it as its owner).
 */
async function ownerOfNew(
  who: OperatorCaller,
  requested: unknown,
  developers: Developers,
): Promise<string | undefined> {
  if (requested !== undefined && typeof requested !== "string")
    throw new PlatformError(
      "bad_request",
      "A deploy's owner is a developer id such as dev_...; leave it out for none.",
    );
  const owner = ownerOfNewDeployment(who, requested);
  if (owner !== undefined && who.kind === "admin" && !(await developers.get(owner)))
    throw new PlatformError("bad_request", `No developer ${owner}.`);
  return owner;
}

/** The parts of a deploy body the deploy takes, with `owner` as decided for this caller. */
function deployInput(input: DeployBody, owner: string | undefined) {
  return {
    code: input.code,
    ...(input.env ? { env: input.env } : {}),
    ...(input.client === undefined ? {} : { client: input.client }),
    ...(owner ? { owner } : {}),
  };
}

/**
 * Runs `work`, which creates a deployment for `who`, within the developer's deployment quota (see
 * owner-cap.ts); the operator's creations are not counted.
 */
function addedBy<T>(who: OperatorCaller, deployments: DeploymentService, work: () => Promise<T>): Promise<T> {
  return deployments.owners.adding(who.kind === "developer" ? who.developer.id : undefined, work);
}

function view(record: DeploymentRecord & { claimToken?: string }) {
  const shown = publicView(record);
  return record.claimToken ? Object.assign(shown, { claimToken: record.claimToken }) : shown;
}

/**
 * The operator API at `http://<domain>:<port>/v1`. The operator (`PLATFORM_ADMIN_TOKEN`) creates
 * developers and manages every deployment; developers manage the deployments they own. A
 * deployment created without an owner is unclaimed and its claim token is returned once. Unknown
 * paths under `/v1` are `404 not_found`.
 */
export function controlPlaneRoutes(
  deployments: DeploymentService,
  auth: AuthService,
  developers: Developers,
  objects: ObjectService,
  adminToken: string,
  transfer: DeploymentTransfer,
  sessions: SessionLookup,
  data: DataConsole,
  guesses: TokenGuesses,
  quota: RequestQuota,
): RouterMiddleware {
  const router = new Router({ prefix: "/v1" });
  router.use(resolvePrincipal(adminToken, developers, guesses, sessions));
  // Each developer's requests a few at a time, counted with their answers' bytes (caller-quota.ts).
  const turns = new OwnerLimit(Number.POSITIVE_INFINITY, LIMITS.controlPlaneRequestsAtOnce, 0);
  const developerKey = (ctx: Context) => (principal(ctx).kind === "developer" ? callerKey(ctx) : undefined);
  router.use(chargeCaller(quota, turns, developerKey));
  // Deploys, settings changes, claims and imports a developer starts, counted together.
  const deployStarts = new DeployStarts();
  registerTransferRoutes(router, transfer, deployments, deployStarts);
  registerDataRoutes(router, deployments, data, objects);
  registerStorageRoutes(router, deployments, objects);
  registerFunctionRoutes(router, deployments, auth);

  registerDeveloperRoutes(router, deployments, developers);

  // A developer's listings read slowly or not at all hold little, and only this many.
  const listings = new OpenListings(2);
  router.get("/deploys", async (ctx) => {
    const who = principal(ctx);
    const shape = listView(ctx.query.view);
    if (who.kind === "developer") listings.begin(who.developer.id, ctx.res);
    const all = await deployments.list();
    ctx.type = "application/json";
    ctx.body = jsonListBody(
      "deploys",
      await withOwners(
        all.filter((d) => mayManage(who, d)),
        developers,
        shape,
      ),
    );
  });
  router.post("/deploys", async (ctx) => {
    deployStarts.charge(principal(ctx));
    const input = await deployBody(ctx);
    const id = checkDeploymentId(input.id);
    checkNewDeploymentId(principal(ctx), id);
    if (await deployments.get(id))
      throw new PlatformError(
        "conflict",
        `Deployment ${id} already exists; redeploy it with PUT /v1/deploys/${id}.`,
      );
    const who = principal(ctx);
    const owner = await ownerOfNew(who, input.owner, developers);
    const created = await addedBy(who, deployments, () =>
      deployments.deploy(id, deployInput(input, owner), undefined, createsOnly(id), stillSpokenFor(ctx)),
    );
    ctx.status = 201;
    ctx.body = view(created);
  });
  router.put("/deploys/:id", async (ctx) => {
    const id = checkDeploymentId(ctx.params.id);
    const existing = await deployments.get(id);
    if (existing) await manageable(ctx, deployments, id);
    else checkNewDeploymentId(principal(ctx), id);
    deployStarts.charge(principal(ctx));
    const input = await deployBody(ctx);
    const who = principal(ctx);
    const owner = existing ? undefined : await ownerOfNew(who, input.owner, developers);
    const toDeploy = deployInput(input, owner);
    const guard = existing ? replacesOnly(who, existing) : createsOnly(id);
    // A new deployment counts against its developer's quota; a redeploy does not.
    const run = (onProgress?: (progress: MigrationProgress) => void) => {
      const work = () => deployments.deploy(id, toDeploy, onProgress, guard, stillSpokenFor(ctx));
      return existing ? work() : addedBy(who, deployments, work);
    };
    // Refused before a stream begins when the quota is full already (checked again in turn).
    if (!existing && who.kind === "developer") await deployments.owners.check(who.developer.id);
    if (ctx.get("accept").includes("application/x-ndjson")) {
      // Streamed deploy: one line per backfill step, then the result (or the error).
      void streamOutcome(
        ctx,
        existing ? 200 : 201,
        (line) => run((progress) => line({ progress })),
        (record) => ({ deploy: view(record) }),
      );
      return;
    }
    const record = await run();
    ctx.status = existing ? 200 : 201;
    ctx.body = view(record);
  });
  router.get("/deploys/:id", async (ctx) => {
    const [shown] = await withOwners(
      [await manageable(ctx, deployments, ctx.params.id)],
      developers,
      publicView,
    );
    ctx.body = shown;
  });
  router.patch("/deploys/:id", async (ctx) => {
    const record = await manageable(ctx, deployments, ctx.params.id);
    deployStarts.charge(principal(ctx));
    ctx.body = publicView(await deployments.updateSettings(record, await body(ctx), stillSpokenFor(ctx)));
  });
  router.post("/deploys/:id/claim", async (ctx) => {
    const who = principal(ctx);
    checkClaimant(who);
    // Counted as a deploy: each takes the deployment's lock, which its own deploys and imports wait for.
    deployStarts.charge(who);
    const id = checkDeploymentId(ctx.params.id);
    const { claimToken } = await body(ctx);
    ctx.body = publicView(await deployments.claim(id, who.developer.id, claimToken, stillSpokenFor(ctx)));
  });
  // Each session minted is a stored record: a developer's are limited (the operator's are not).
  const sessionMints = new RequestQuota({
    burst: LIMITS.sessionsMintedPerMinute,
    perSecond: LIMITS.sessionsMintedPerMinute / 60,
  });
  router.post("/deploys/:id/sessions", async (ctx) => {
    const record = await manageable(ctx, deployments, ctx.params.id);
    const who = principal(ctx);
    if (who.kind === "developer") sessionMints.charge(who.developer.id);
    const input = await body(ctx);
    ctx.status = 201;
    // For the deployment the caller may manage, not for one created under its id since.
    ctx.body = await auth.signInAccount(record.id, input.email as string, record.incarnation ?? null);
  });
  router.get("/deploys/:id/logs", async (ctx) => {
    const record = await manageable(ctx, deployments, ctx.params.id);
    streamLogs(ctx, deployments.logs, record.id, () => principalStillLive(ctx), callerKey(ctx));
  });
  router.delete("/me/deploys/:id/storage/:visibility/:object", async (ctx) => {
    const record = await manageable(ctx, deployments, ctx.params.id);
    const visibility = ctx.params.visibility;
    if (visibility !== "public" && visibility !== "private")
      throw new PlatformError("not_found", "No such object.");
    await objects.remove(record, visibility, checkObjectId(ctx.params.object as string), OWNER_DELETE);
    ctx.status = 204;
  });
  router.delete("/deploys/:id", async (ctx) => {
    const record = await manageable(ctx, deployments, ctx.params.id);
    await deployments.remove(record, stillSpokenFor(ctx));
    ctx.status = 204;
  });
  return ownPaths((path) => path === "/v1" || path.startsWith("/v1/"), router.routes());
}
