/** Builds the `ctx` object of docs/capsules.md for one execution. */
import { type BridgeIdentity, SYSCALL } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { syscall, trackLogCall } from "./bridge.js";
import { createDatabaseApi, type DatabaseExecutor } from "./database.js";
import type { ExecutionState } from "./determinism.js";

/** What one execution knows about itself. */
export interface ExecutionInfo {
  requestId: number;
  execution: ExecutionState;
  tables: readonly string[];
  identity: BridgeIdentity | null;
  env: Record<string, string>;
  /** A ready `ctx.db` (the legacy snapshot runtime's); else the v1 API over the bridge. */
  db?: unknown;
}

function databaseExecutor(requestId: number, execution: ExecutionState): DatabaseExecutor {
  const call = <Op extends Parameters<typeof syscall>[2]>(op: Op, args: Parameters<typeof syscall<Op>>[3]) =>
    syscall(execution, requestId, op, args);
  return {
    get: (table, id) => call(SYSCALL.dbGet, { table, id }),
    query: (spec, terminal) => call(SYSCALL.dbQuery, { spec, terminal }),
    insert: async (table, row) => (await call(SYSCALL.dbInsert, { table, row: row as never })) as string,
    update: async (table, id, patch) => {
      await call(SYSCALL.dbUpdate, { table, id, patch: patch as never });
    },
    delete: async (table, id) => {
      await call(SYSCALL.dbDelete, { table, id });
    },
  };
}

function auth(identity: BridgeIdentity | null) {
  const copy = () => (identity ? { ...identity } : null);
  return Object.freeze({
    getIdentity: copy,
    requireIdentity() {
      const who = copy();
      if (!who)
        throw new PlatformError(
          "unauthorized",
          "Sign in required: this handler needs an identity (a guest or an account).",
        );
      return who;
    },
    requireSignedIn() {
      const who = copy();
      if (!who)
        throw new PlatformError("unauthorized", "Sign in required: this handler needs a signed-in account.");
      if (who.kind !== "account")
        throw new PlatformError("forbidden", "This handler needs a signed-in account; guests cannot use it.");
      return who;
    },
  });
}

/** A log level of `ctx.log` (and of `console`, whose `log`, `info` and `debug` are `info`). */
export type LogLevel = "info" | "warn" | "error";

/**
 * Writes one log line for `execution`: its fields as JSON (`{ unserializable: true }` when they are
 * not), never failing the handler. The handler's answer waits for its lines (see trackLogCall).
 */
export function writeLog(
  execution: ExecutionState,
  level: LogLevel,
  message: string,
  fields?: unknown,
): void {
  let safeFields: Record<string, unknown> | undefined;
  try {
    safeFields =
      fields === undefined ? undefined : (JSON.parse(JSON.stringify(fields)) as Record<string, unknown>);
  } catch {
    safeFields = { unserializable: true };
  }
  const call = syscall(execution, execution.requestId, SYSCALL.log, {
    level,
    message,
    ...(safeFields ? { fields: safeFields } : {}),
  }).catch(() => {});
  trackLogCall(execution.requestId, call);
}

function logger(execution: ExecutionState) {
  const write = (level: LogLevel) => (message: unknown, fields?: unknown) =>
    writeLog(execution, level, String(message), fields);
  return Object.freeze({ info: write("info"), warn: write("warn"), error: write("error") });
}

/**
 * The `ctx` of one execution: `db`, `auth`, `env` and `log`, each built on first use (most handlers
 * touch one or two of them, and every request builds a `ctx`). Frozen; its state lives in private
 * fields, which user code cannot reach, and the class cannot be reached through `ctx.constructor`
 * to build a `ctx` for another execution.
 */
class HandlerContext {
  readonly #info: ExecutionInfo;
  #db: unknown;
  #auth: unknown;
  #env: unknown;
  #log: unknown;

  constructor(info: ExecutionInfo) {
    this.#info = info;
    Object.freeze(this);
  }

  get db(): unknown {
    this.#db ??=
      this.#info.db ??
      createDatabaseApi(this.#info.tables, databaseExecutor(this.#info.requestId, this.#info.execution));
    return this.#db;
  }

  get auth(): unknown {
    this.#auth ??= auth(this.#info.identity);
    return this.#auth;
  }

  get env(): unknown {
    this.#env ??= Object.freeze({ ...this.#info.env });
    return this.#env;
  }

  get log(): unknown {
    this.#log ??= logger(this.#info.execution);
    return this.#log;
  }
}
Object.defineProperty(HandlerContext.prototype, "constructor", { value: undefined });
Object.freeze(HandlerContext.prototype);

/** The `ctx` for one execution: db, auth, env, log. */
export function createContext(info: ExecutionInfo): Readonly<Record<"db" | "auth" | "env" | "log", unknown>> {
  return new HandlerContext(info) as unknown as Readonly<Record<"db" | "auth" | "env" | "log", unknown>>;
}
