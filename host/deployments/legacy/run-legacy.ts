import type { DispatchRequest, LegacyOutcome } from "../../../sdk/protocol/index.js";
import { PlatformError } from "../../../sdk/values/index.js";
import { checkLegacyQueryWrites } from "../../access/index.js";
import { newRowId, type Transaction } from "../../db/index.js";
import { type HandlerLogEntry, type IsolateKeeper, transactionSyscalls } from "../../isolates/index.js";
import { handlerError } from "../dispatch.js";
import type { DeploymentRecord } from "../records.js";

/** Runs of a legacy handler spent on asking for more insert ids, beyond one per table. */
const LEGACY_ID_ROUNDS = 12;
/** Most rows one legacy handler may insert. */
const LEGACY_MAX_IDS = 10_000;

/** A dispatch request of a legacy (apiVersion 0) handler. */
export type LegacyRequest = Extract<DispatchRequest, { kind: "legacyQuery" | "legacyMutation" }>;

/** Whether `request` goes to a legacy handler (and so through {@link runLegacy}). */
export function isLegacyRequest(request: DispatchRequest): request is LegacyRequest {
  return request.kind === "legacyQuery" || request.kind === "legacyMutation";
}

/**
 * Turns the fields of a query or mutation request into the legacy one: nothing shipped yet, no ids.
 * `fields` is reused, not copied (the call path allocates one request).
 */
export function asLegacyRequest<F extends object>(fields: F, kind: "query" | "mutation") {
  return Object.assign(fields, {
    kind: kind === "query" ? ("legacyQuery" as const) : ("legacyMutation" as const),
    tablesJson: "{}",
    ids: [] as string[],
  });
}

/**
 * Runs a legacy handler on the snapshot runtime inside `tx`: ships the tables it asks for (every
 * row counts as read) and ids for its inserts, runs it again from the start until it finishes,
 * then applies its writes (mutations) in the same transaction.
 */
export async function runLegacy(
  tx: Transaction,
  runner: IsolateKeeper,
  request: LegacyRequest,
  sink: (entry: HandlerLogEntry) => void,
  record: DeploymentRecord,
): Promise<{ valueJson: string; cpuMs: number }> {
  const shipped = new Map<string, string[]>();
  const issued: string[] = [];
  let cpuMs = 0;
  const syscalls = transactionSyscalls(tx, sink);
  const tables = Object.keys(record.declaration.schema.tables).length;
  for (let attempt = 0; attempt <= tables + LEGACY_ID_ROUNDS; attempt++) {
    const tablesJson = `{${[...shipped].map(([t, rows]) => `${JSON.stringify(t)}:[${rows.join(",")}]`).join(",")}}`;
    const response = await runner.run(Object.assign({}, request, { tablesJson, ids: issued }), syscalls);
    cpuMs += response.cpuMs;
    if (!response.ok) throw handlerError(response.error, record.env);
    const outcome = JSON.parse(response.valueJson) as LegacyOutcome;
    if ("need" in outcome) {
      for (const table of outcome.need.tables ?? [])
        if (!shipped.has(table)) shipped.set(table, await tx.legacyTable(table));
      const wanted = Math.min(Number(outcome.need.ids) || 0, LEGACY_MAX_IDS);
      while (issued.length < wanted) issued.push(newRowId());
      continue;
    }
    tx.budget.returned(Number(outcome.returned) || 0);
    if (request.kind === "legacyMutation") await tx.applyLegacyWrites(outcome.writes, new Set(issued));
    else checkLegacyQueryWrites(outcome.writes?.length ?? 0);
    return { valueJson: JSON.stringify(outcome.value ?? null), cpuMs };
  }
  throw new PlatformError("handler_error", `Legacy handler ${request.name} kept asking for more data.`);
}
