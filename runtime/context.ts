/** Builds the `ctx` object of SPEC.md "Handler context" for one execution. */
import { type BridgeIdentity, SYSCALL } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { syscall } from "./bridge.js";
import { createDatabaseApi, type DatabaseExecutor } from "./database.js";

/** What one execution knows about itself. */
export interface ExecutionInfo {
  requestId: number;
  tables: readonly string[];
  identity: BridgeIdentity | null;
  env: Record<string, string>;
}

function databaseExecutor(requestId: number): DatabaseExecutor {
  return {
    get: (table, id) => syscall(requestId, SYSCALL.dbGet, { table, id }),
    query: (spec, terminal) => syscall(requestId, SYSCALL.dbQuery, { spec, terminal }),
    insert: async (table, row) =>
      (await syscall(requestId, SYSCALL.dbInsert, { table, row: row as never })) as string,
    update: async (table, id, patch) => {
      await syscall(requestId, SYSCALL.dbUpdate, { table, id, patch: patch as never });
    },
    delete: async (table, id) => {
      await syscall(requestId, SYSCALL.dbDelete, { table, id });
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

function logger(requestId: number) {
  const write = (level: "info" | "warn" | "error") => (message: unknown, fields?: unknown) => {
    let safeFields: Record<string, unknown> | undefined;
    try {
      safeFields =
        fields === undefined ? undefined : (JSON.parse(JSON.stringify(fields)) as Record<string, unknown>);
    } catch {
      safeFields = { unserializable: true };
    }
    void syscall(requestId, SYSCALL.log, {
      level,
      message: String(message),
      ...(safeFields ? { fields: safeFields } : {}),
    }).catch(() => {});
  };
  return Object.freeze({ info: write("info"), warn: write("warn"), error: write("error") });
}

/** The `ctx` for one execution: db, auth, env, log. */
export function createContext(info: ExecutionInfo): Readonly<Record<"db" | "auth" | "env" | "log", unknown>> {
  return Object.freeze({
    db: createDatabaseApi(info.tables, databaseExecutor(info.requestId)),
    auth: auth(info.identity),
    env: Object.freeze({ ...info.env }),
    log: logger(info.requestId),
  });
}
