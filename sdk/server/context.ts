import type { DatabaseReader, DatabaseWriter, SchemaDefinition } from "./data-model.js";
import type { UserId } from "./fields.js";

/** Who is calling: a protected guest or a signed-in account with a verified email. */
export interface Identity {
  userId: UserId;
  kind: "guest" | "account";
  email?: string;
}

/** `ctx.auth`: the caller's identity. */
export interface Auth {
  /** The caller (guest or account), or throws `unauthorized`. */
  requireIdentity(): Identity;
  /** The signed-in account, or throws `unauthorized` (no identity) / `forbidden` (a guest). */
  requireSignedIn(): Identity & { kind: "account"; email: string };
  /** The caller or `null`; never throws. */
  getIdentity(): Identity | null;
}

/** `ctx.log`: structured log lines tagged with deployment, handler and request. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

interface BaseCtx {
  auth: Auth;
  /** Server-only values from `.env.platform.server`. */
  env: Readonly<Record<string, string>>;
  log: Logger;
}

/** The context of a query handler. */
export interface QueryCtx<S extends SchemaDefinition> extends BaseCtx {
  db: DatabaseReader<S>;
}

/** The context of a mutation handler. */
export interface MutationCtx<S extends SchemaDefinition> extends BaseCtx {
  db: DatabaseWriter<S>;
}
