import type { QuerySpec, QueryTerminal } from "../../sdk/protocol/index.js";
import { encodePageAnswer, encodeRowAnswer, encodeRowsAnswer, SYSCALL } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { after, NOT_READY, type QueryOutcome, runQuery, type Transaction } from "../db/index.js";
import { EncodedAnswer } from "./encoded-answer.js";
import type { SyscallHandler } from "./transport.js";

/** One structured log line written by a handler through `ctx.log`. */
export interface HandlerLogEntry {
  level: "info" | "warn" | "error";
  message: string;
  fields?: Record<string, unknown>;
}

function text(value: unknown, what: string): string {
  if (typeof value !== "string")
    throw new PlatformError("bad_request", `Malformed platform call: ${what} must be a string.`);
  return value;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null)
    throw new PlatformError("bad_request", `Malformed platform call: ${what} must be an object.`);
  return value as Record<string, unknown>;
}

/** Rows read from the store go back as raw JSON; `null` when there is no such row. */
function rawRow(json: string | null): EncodedAnswer {
  return new EncodedAnswer(encodeRowAnswer(json));
}

function toNull(): null {
  return null;
}

/**
 * The host end of the bridge for one handler execution: every op is checked here, whatever the
 * isolate sent, and answered from the handler's own transaction. Rows go back as raw JSON. Point
 * reads and writes, and queries, try the transaction's synchronous fast path first
 * (host/db/fast-path.ts), so they and log lines answer at once when the store can (see
 * {@link SyscallHandler}).
 */
export function transactionSyscalls(tx: Transaction, log: (entry: HandlerLogEntry) => void): SyscallHandler {
  return (op, rawArgs) => {
    const args = object(rawArgs, "arguments");
    switch (op) {
      case SYSCALL.dbGet: {
        const table = text(args.table, "table");
        const id = text(args.id, "id");
        const row = tx.tryGetSync(table, id);
        return row !== NOT_READY ? rawRow(row) : tx.get(table, id).then(rawRow);
      }
      case SYSCALL.dbQuery: {
        const outcome = runQuery(
          tx,
          object(args.spec, "query") as unknown as QuerySpec,
          object(args.terminal, "terminal") as unknown as QueryTerminal,
        );
        return after(outcome, encodeOutcome);
      }
      case SYSCALL.dbInsert: {
        const table = text(args.table, "table");
        const id = tx.tryInsertSync(table, args.row);
        return id !== NOT_READY ? id : tx.insert(table, args.row);
      }
      case SYSCALL.dbUpdate: {
        const table = text(args.table, "table");
        const id = text(args.id, "id");
        return tx.tryUpdateSync(table, id, args.patch) ? null : tx.update(table, id, args.patch).then(toNull);
      }
      case SYSCALL.dbDelete: {
        const table = text(args.table, "table");
        const id = text(args.id, "id");
        return tx.tryDeleteSync(table, id) ? null : tx.delete(table, id).then(toNull);
      }
      case SYSCALL.log: {
        const level = args.level === "warn" || args.level === "error" ? args.level : "info";
        const entry: HandlerLogEntry = {
          level,
          // Cut (and copied) by the log's sink: a cut here would keep all of it alive.
          message: String(args.message),
        };
        if (typeof args.fields === "object" && args.fields !== null)
          entry.fields = args.fields as Record<string, unknown>;
        log(entry);
        return null;
      }
      default:
        throw new PlatformError("bad_request", `Unknown platform call ${JSON.stringify(op)}.`);
    }
  };
}

function encodeOutcome(outcome: QueryOutcome): unknown {
  switch (outcome.kind) {
    case "rows":
      return new EncodedAnswer(encodeRowsAnswer(outcome.rows));
    case "row":
      return rawRow(outcome.row);
    case "count":
      return outcome.count;
    case "page":
      return new EncodedAnswer(encodePageAnswer(outcome.page, outcome.isDone, outcome.continueCursor));
  }
}
