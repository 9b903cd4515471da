/**
 * The one seam between an isolate and the host: op names (versioned) and the JSON shapes that cross.
 * Everything crossing is a string, JSON but for an endpoint's answer (endpoint-answer.ts); no host
 * object ever enters an isolate.
 */
import type { FieldValue } from "../values/index.js";
import { LIMITS } from "./limits.js";
import type { QuerySpec, QueryTerminal } from "./query.js";

/** Syscall op names. A new shape gets a new version, never a changed meaning. */
export const SYSCALL = {
  dbGet: "v1.db.get",
  dbQuery: "v1.db.query",
  dbInsert: "v1.db.insert",
  dbUpdate: "v1.db.update",
  dbDelete: "v1.db.delete",
  log: "v1.log",
} as const;

/** One of the {@link SYSCALL} op names. */
export type SyscallOp = (typeof SYSCALL)[keyof typeof SYSCALL];

/** Arguments of each op (the `requestId` is added by the runtime to every call). */
export interface SyscallArgs {
  "v1.db.get": { table: string; id: string };
  "v1.db.query": { spec: QuerySpec; terminal: QueryTerminal };
  "v1.db.insert": { table: string; row: Record<string, FieldValue | null> };
  "v1.db.update": { table: string; id: string; patch: Record<string, FieldValue | null> };
  "v1.db.delete": { table: string; id: string };
  "v1.log": { level: "info" | "warn" | "error"; message: string; fields?: Record<string, unknown> };
}

/** The identity a handler runs as, as the runtime sees it. */
export interface BridgeIdentity {
  userId: string;
  kind: "guest" | "account";
  email?: string;
}

/** An incoming HTTP request for a custom endpoint, as the runtime sees it. */
export interface BridgeHttpRequest {
  method: string;
  path: string;
  headers: Array<[string, string]>;
  query: Array<[string, string]>;
  /**
   * The body as base64, its only form: the runtime decodes it (and its text) when the handler
   * asks, on the tenant's CPU. As JSON text beside it, a body of control characters was six
   * times its size for the host's main thread to encode.
   */
  bodyBase64: string;
}

/** What the host asks an isolate to do. */
export type DispatchRequest =
  | { kind: "declare" }
  | {
      kind: "query" | "mutation";
      requestId: number;
      name: string;
      argsJson: string;
      identity: BridgeIdentity | null;
      env: Record<string, string>;
      now: number;
      seed: number;
    }
  | {
      /** Answered with an endpoint answer's text (endpoint-answer.ts), not a JSON value. */
      kind: "endpoint";
      requestId: number;
      name: string;
      readOnly: boolean;
      request: BridgeHttpRequest;
      identity: BridgeIdentity | null;
      env: Record<string, string>;
      now: number;
      seed: number;
    }
  | {
      /** A legacy (database API v0) handler on the snapshot runtime. */
      kind: "legacyQuery" | "legacyMutation";
      requestId: number;
      name: string;
      argsJson: string;
      /** JSON object: table -> array of its rows, for every table shipped so far. */
      tablesJson: string;
      /** Ids for rows the handler inserts (made by the host: unguessable). */
      ids: string[];
      identity: BridgeIdentity | null;
      env: Record<string, string>;
      now: number;
      seed: number;
    }
  | {
      kind: "guestUpgrade";
      requestId: number;
      guestUserId: string;
      userId: string;
      identity: BridgeIdentity | null;
      env: Record<string, string>;
      now: number;
      seed: number;
    };

/**
 * The fields of a query's or mutation's request (its `kind` aside, which the caller adds last), made
 * in the one order the host sends them in. The runtime parses such a request while it loads
 * (runtime/dispatch.ts), so that the first request of a fresh isolate finds the hidden classes its
 * parse needs made already.
 */
export function handlerRequestFields(
  name: string,
  argsJson: string,
  identity: BridgeIdentity | null,
  env: Record<string, string>,
  now: number,
  seed: number,
) {
  return { requestId: 0, name, argsJson, identity, env, now, seed };
}

/** A write of a legacy handler, applied by the host when the handler has finished. */
export type LegacyWrite =
  | { op: "insert"; table: string; row: Record<string, FieldValue> & { id: string; createdAt: string } }
  | { op: "update"; table: string; id: string; patch: Record<string, FieldValue | null> }
  | { op: "delete"; table: string; id: string };

/**
 * What a legacy handler's run answers (as its value JSON): either what it still needs (tables not
 * shipped yet, more ids for inserts: the host ships them and runs it again from the start), or its
 * result with the rows it was handed and its writes.
 */
export type LegacyOutcome =
  | { need: { tables: string[]; ids: number } }
  | { value: unknown; returned: number; writes: LegacyWrite[] };

/**
 * A handler's failure as it leaves the isolate. `stack`: the frames of a thrown `Error` (positions
 * in the bundle, `capsule.js:L:C`), at most `LIMITS.errorStackChars`; the host keeps it for the
 * developer's logs and never sends it to callers.
 */
export interface DispatchError {
  code: string;
  message: string;
  stack?: string;
}

/**
 * Characters of a failure's message the runtime sends: what the host keeps, and an env value's
 * length more, so the host still sees whole any secret the cut would halve (it hides it).
 */
export const DISPATCH_ERROR_MESSAGE_CHARS = LIMITS.errorMessageChars + LIMITS.envValueChars;

/**
 * The longest failure answer the runtime makes: its message and stack, every character escaped
 * (six), and its code. The host refuses a longer one before parsing it.
 */
export const DISPATCH_ERROR_CHARS = 6 * (DISPATCH_ERROR_MESSAGE_CHARS + LIMITS.errorStackChars) + 256;

/** What an isolate answers: a JSON value (as a string) or an error with a stable code. */
export type DispatchResponse = { ok: true; valueJson: string } | { ok: false; error: DispatchError };

/**
 * The wire form of a {@link DispatchResponse}: `=` followed by the value's JSON, or `!` followed by
 * the error's JSON. The value is never JSON-encoded twice (a page of rows would be escaped again).
 */
export function encodeDispatchResponse(response: DispatchResponse): string {
  return response.ok ? `=${response.valueJson}` : `!${JSON.stringify(response.error)}`;
}

/** Decodes {@link encodeDispatchResponse}; anything else is refused. */
export function decodeDispatchResponse(wire: string): DispatchResponse {
  if (wire.startsWith("=")) return { ok: true, valueJson: wire.slice(1) };
  if (wire.startsWith("!")) return { ok: false, error: JSON.parse(wire.slice(1)) as DispatchError };
  throw new Error("Malformed dispatch response");
}

/** What a syscall answers. */
export type SyscallResponse =
  | { ok: true; value: unknown }
  | { ok: false; error: { code: string; message: string } };
