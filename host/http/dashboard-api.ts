import type Router from "@koa/router";
import type { Context } from "koa";
import { LIMITS, type RangeOp, type RowsQuery } from "../../sdk/protocol/index.js";
import { CREATION_INDEX, PlatformError } from "../../sdk/values/index.js";
import { checkDataWrite, mayWriteData } from "../access/index.js";
import type { DataActor, DataConsole, DeploymentRecord, DeploymentService } from "../deployments/index.js";
import type { ObjectService } from "../storage/index.js";
import { readJsonObject } from "./body.js";
import { stillSpokenFor } from "./deploy-guards.js";
import { actorLabel, checkStillSame, managedDeployment } from "./managed-deployment.js";
import { principalOf } from "./principal.js";

const RANGE_OPS = new Set(["eq", "gt", "gte", "lt", "lte"]);

function bad(message: string): PlatformError {
  return new PlatformError("bad_request", message);
}

/** One query-string value (the last when repeated), or undefined. */
function param(ctx: Context, name: string): string | undefined {
  const value = ctx.query[name];
  return Array.isArray(value) ? value.at(-1) : value;
}

/**
 * `range=<JSON>`: the comparisons of a `withIndex` range as the engine takes them,
 * `[{ "op": "eq", "field": "channel", "value": "general" }, { "op": "gte", ... }]`. Only the shape
 * is checked here; fields, order and value types are the range compiler's to judge.
 */
function parseRange(text: string | undefined): RangeOp[] {
  if (text === undefined || text === "") return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad('range must be JSON: [{"op": "eq", "field": "<field>", "value": <value>}, ...].');
  }
  if (!Array.isArray(value) || value.length > 16)
    throw bad("range must be a list of at most 16 comparisons.");
  return value.map((item: unknown) => {
    const op = item as Partial<RangeOp> | null;
    if (
      typeof op !== "object" ||
      op === null ||
      typeof op.op !== "string" ||
      !RANGE_OPS.has(op.op) ||
      typeof op.field !== "string" ||
      !("value" in op)
    )
      throw bad(
        'Each range comparison is {"op": "eq"|"gt"|"gte"|"lt"|"lte", "field": "<field>", "value": <value>}.',
      );
    return { op: op.op, field: op.field, value: op.value ?? null };
  });
}

/** The rows query of a request: index (default `by_creation`), order (default newest first), range, page. */
function rowsQuery(ctx: Context): RowsQuery {
  const order = param(ctx, "order") ?? "desc";
  if (order !== "asc" && order !== "desc")
    throw bad(`order is "asc" or "desc", got ${JSON.stringify(order)}.`);
  const numItems = Number(param(ctx, "numItems") ?? 25);
  const cursor = param(ctx, "cursor");
  return {
    index: param(ctx, "index") || CREATION_INDEX,
    order,
    range: parseRange(param(ctx, "range")),
    numItems,
    cursor: cursor ? cursor : null,
  };
}

/** The table of the path, which must be one the deployment declares. */
function tableOf(ctx: Context, record: DeploymentRecord): string {
  const table = ctx.params.table as string;
  if (!Object.hasOwn(record.declaration.schema.tables, table))
    throw new PlatformError("not_found", `No table ${JSON.stringify(table)} in deployment ${record.id}.`);
  return table;
}

/**
 * How the deployment's log names the person who changed a row, and the check their change makes
 * once it holds the deployment's write lock (a token replaced while it waited behind a migration).
 */
function actorOf(ctx: Context): DataActor {
  return { label: actorLabel(principalOf(ctx)), stillAllowed: stillSpokenFor(ctx) };
}

/**
 * The dashboard's data routes on the operator API, also usable by the CLI with a bearer token:
 * a deployment's tables and totals, pages of rows by any index range, single rows, and (for the
 * owner; the operator only on unclaimed deployments) inserts, edits and deletes that go through a
 * mutation's validation and are logged as the developer's action. Registered on the `/v1` router,
 * after its principal resolution.
 */
export function registerDataRoutes(
  router: Router,
  deployments: DeploymentService,
  data: DataConsole,
  objects: ObjectService,
): void {
  router.get("/deploys/:id/totals", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    const stored = await objects.deploymentTotals(record);
    ctx.body = { rows: await data.totalRows(record), objects: stored.count, bytes: stored.bytes };
  });
  router.get("/deploys/:id/tables", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    ctx.body = await data.tables(record, mayWriteData(principalOf(ctx), record));
  });
  router.get("/deploys/:id/tables/:table/rows", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    ctx.body = await data.rows(record, tableOf(ctx, record), rowsQuery(ctx));
  });
  router.get("/deploys/:id/tables/:table/rows/:row", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    ctx.body = { row: await data.row(record, tableOf(ctx, record), ctx.params.row as string) };
  });
  router.post("/deploys/:id/tables/:table/rows", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    checkDataWrite(principalOf(ctx), record);
    const table = tableOf(ctx, record);
    const input = await readJsonObject(ctx, LIMITS.requestBodyBytes);
    await checkStillSame(deployments, record);
    ctx.status = 201;
    ctx.body = { row: await data.insert(record, table, input, actorOf(ctx)) };
  });
  router.patch("/deploys/:id/tables/:table/rows/:row", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    checkDataWrite(principalOf(ctx), record);
    const table = tableOf(ctx, record);
    const patch = await readJsonObject(ctx, LIMITS.requestBodyBytes);
    await checkStillSame(deployments, record);
    ctx.body = {
      row: await data.update(record, table, ctx.params.row as string, patch, actorOf(ctx)),
    };
  });
  router.delete("/deploys/:id/tables/:table/rows/:row", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    checkDataWrite(principalOf(ctx), record);
    await data.remove(record, tableOf(ctx, record), ctx.params.row as string, actorOf(ctx));
    ctx.status = 204;
  });
}
