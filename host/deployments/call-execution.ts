import {
  type BridgeHttpRequest,
  type BridgeIdentity,
  type CallUsage,
  type DispatchRequest,
  handlerRequestFields,
} from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { checkAppCall, checkEndpointCall } from "../access/index.js";
import type { SessionProof } from "../auth/index.js";
import { type HostDatabase, type ReadSet, refusedForLostLock } from "../db/index.js";
import { type IsolatePool, retryAbandoned } from "../isolates/index.js";
import { type CallObserver, IGNORE_CALLS } from "./call-observer.js";
import { CALL_KINDS, nextSeed } from "./dispatch.js";
import { HandlerRun } from "./handler-run.js";
import { IdempotencySweeper, IdempotentMutation } from "./idempotency.js";
import { asLegacyRequest } from "./legacy/index.js";
import type { CallFailure, LogHub, RequestId } from "./log-hub.js";
import { quarantine } from "./quarantine.js";
import type { DeploymentRecord } from "./records.js";
import { unknownHandlerError } from "./unknown-handler.js";

/** The outcome of one query, mutation or endpoint call. */
export interface CallResult {
  /** The value's JSON; an endpoint's answer as the runtime encodes it (see `splitEndpointAnswer`). */
  valueJson: string;
  usage: CallUsage;
  readSet: ReadSet;
  writeSet: Buffer[];
}

/** A query or mutation call. */
export interface Call {
  kind: "query" | "mutation";
  name: string;
  argsJson: string;
  identity: BridgeIdentity | null;
  /** The session behind `identity` (absent for anonymous calls). */
  session?: SessionProof | null;
  /**
   * A mutation's idempotency key (checked with `parseIdempotencyKey`): a repeat with the same key
   * by the same caller gets the first outcome without running again (see {@link IdempotentMutation}).
   * Ignored for queries.
   */
  idempotencyKey?: string | undefined;
  /**
   * Whose keys an anonymous caller's are (its client address, as quotas key it): anonymous callers
   * elsewhere never read its results, nor block its keys. Unset: anonymous callers share keys.
   */
  anonymousCaller?: string | undefined;
  /** Told what the call used once it ran, whether it succeeded or failed (the dashboard's runner). */
  onUsage?: (usage: CallUsage) => void;
  /** The incarnation the caller was checked for (a socket's): refused on another (the id re-created). */
  incarnation?: string | null | undefined;
}

/** Thrown before a call runs when its deployment was redeployed since its record was read. */
class RedeployedMeanwhile extends Error {
  constructor(readonly newer: DeploymentRecord) {
    super("redeployed meanwhile");
  }
}

/** A call's failure handler that starts it again with the newer record when it was redeployed meanwhile. */
function startedAgain(again: (newer: DeploymentRecord) => Promise<CallResult>) {
  return (error: unknown): Promise<CallResult> =>
    error instanceof RedeployedMeanwhile ? again(error.newer) : Promise.reject(error);
}

function statusOf(error: unknown): string {
  return isPlatformError(error) ? error.code : "internal";
}

/**
 * A failed call as its developer reads it in the logs: the message its caller got (the expose
 * rule of host/http/errors.ts, so no host detail reaches the logs either) and the handler's stack.
 */
function failureOf(error: unknown, stack: string | undefined): CallFailure {
  const message = isPlatformError(error) && error.expose ? error.message : "Internal error.";
  return stack === undefined ? { message } : { message, stack };
}

/**
 * Runs the handlers of deployments: checks the caller against the access policy, builds the
 * dispatch request, runs it in one transaction (queries on a snapshot, mutations serialized), and
 * records the call in the log with what it used.
 */
export class CallExecutor {
  private requestCounter = 0;
  private readonly sweeper: IdempotencySweeper;

  constructor(
    private readonly db: HostDatabase,
    private readonly pool: IsolatePool,
    private readonly logs: LogHub,
    private readonly observer: CallObserver = IGNORE_CALLS,
    /** A deployment's newest record this host knows (its registry's), if any. */
    private readonly newest: (id: string) => DeploymentRecord | undefined = () => undefined,
  ) {
    this.sweeper = new IdempotencySweeper(db.store);
  }

  /** Forgets a deleted deployment (its records went with it). */
  forget(id: string): void {
    this.sweeper.forget(id);
  }

  /** Runs a query or mutation of `record` for `call.identity`. */
  call(record: DeploymentRecord, call: Call): Promise<CallResult> {
    try {
      checkAppCall(record, call.identity);
      const list = call.kind === "query" ? record.declaration.queries : record.declaration.mutations;
      if (!list.includes(call.name))
        throw unknownHandlerError(record.declaration, record.id, call.kind, call.name);
    } catch (error) {
      this.observer.refused(record.id, call.kind, statusOf(error));
      throw error;
    }
    // Object.assign, not a literal that starts with a spread: see withMode in host/db.
    const fields = handlerRequestFields(
      call.name,
      call.argsJson,
      call.identity,
      record.env,
      Date.now(),
      nextSeed(),
    );
    const request: DispatchRequest =
      record.declaration.apiVersion === 0
        ? asLegacyRequest(fields, call.kind)
        : Object.assign(fields, { kind: call.kind });
    const idempotent =
      call.kind === "mutation" && call.idempotencyKey !== undefined
        ? new IdempotentMutation(
            record.id,
            call.identity?.userId ??
              (call.anonymousCaller === undefined ? "" : `anonymous:${call.anonymousCaller}`),
            call.idempotencyKey,
            call.name,
            call.argsJson,
            fields.now,
          )
        : undefined;
    const result = this.execute(
      record,
      call.kind === "mutation",
      call.name,
      call.argsJson,
      request,
      call.session,
      idempotent,
      call.onUsage,
    ).catch(startedAgain((newer) => this.call(newer, call)));
    if (idempotent) this.sweeper.noteMutation(record.id, fields.now);
    return result;
  }

  /**
   * Runs custom endpoint `name` of `record` for an HTTP request: `readOnly` endpoints as queries,
   * the others as mutations (serialized, one transaction). Its `valueJson` is the endpoint's answer
   * as the runtime encodes it: its head's JSON, a line feed and its body (see `splitEndpointAnswer`).
   */
  callEndpoint(
    record: DeploymentRecord,
    name: string,
    request: BridgeHttpRequest,
    identity: BridgeIdentity | null,
    session?: SessionProof | null,
  ): Promise<CallResult> {
    const endpoint = record.declaration.endpoints.find((e) => e.name === name);
    try {
      checkEndpointCall(record, identity);
    } catch (error) {
      this.observer.refused(record.id, "endpoint", statusOf(error));
      throw error;
    }
    if (!endpoint) {
      this.observer.refused(record.id, "endpoint", "not_found");
      throw new PlatformError("not_found", `No endpoint named ${name}.`);
    }
    const now = Date.now();
    return this.execute(
      record,
      !endpoint.readOnly,
      `endpoint:${name}`,
      JSON.stringify([request.method, request.path, request.query]),
      {
        kind: "endpoint",
        requestId: 0,
        name,
        readOnly: endpoint.readOnly,
        request,
        identity,
        env: record.env,
        now,
        seed: nextSeed(),
      },
      session,
    ).catch(startedAgain((newer) => this.callEndpoint(newer, name, request, identity, session)));
  }

  /**
   * Runs one dispatch request in the deployment's isolate inside one transaction, again if the
   * isolate abandoned it, and records the call (outcome and usage) in the log. A writing call
   * checks the caller's session first, in its transaction (see {@link SessionProof}); one with an
   * idempotency key answers a recorded outcome instead of running again.
   */
  private async execute(
    record: DeploymentRecord,
    writes: boolean,
    handler: string,
    argsJson: string,
    request: DispatchRequest,
    session?: SessionProof | null,
    idempotent?: IdempotentMutation,
    onUsage?: (usage: CallUsage) => void,
  ): Promise<CallResult> {
    const kind = CALL_KINDS[request.kind];
    try {
      quarantine.check(record);
    } catch (error) {
      this.observer.refused(record.id, kind, statusOf(error));
      throw error;
    }
    const database = await this.db.deployment(record.id);
    // Redeployed meanwhile: the call starts again with the new record, whose code runs it (its
    // handlers, env and API version must be the code's), as if it had come a moment later.
    const newer = this.newest(record.id);
    if (newer && newer.artifact !== record.artifact && newer.incarnation === record.incarnation)
      throw new RedeployedMeanwhile(newer);
    const runner = this.pool.runner(record.id, record.artifact, record.owner);
    const requestId: RequestId = { startedMs: Date.now(), seq: ++this.requestCounter };
    const sink = this.logs.sink(record.id, handler, requestId, record.env);
    const stamp = this.logs.stamp();
    const run = new HandlerRun(runner, request, record);
    const options = {
      handler,
      argsJson,
      now: "now" in request ? request.now : Date.now(),
      onUsage: run.onUsage,
      reads: readFirst(session, idempotent),
      // The code runs on this incarnation's data only: a host that has not heard of the
      // deployment's deletion may hold its record and code still (see host/db/incarnation.ts).
      incarnation: record.incarnation ?? null,
    };
    const name = "name" in request ? request.name : handler;
    try {
      // A mutation refused for a lost write lock wrote nothing: it runs again, under the lock taken anew.
      const result = await retryAbandoned(
        sink,
        (log) =>
          writes
            ? database.mutate(async (tx) => {
                if (session) session.check(await tx.readKey(session.key));
                return idempotent ? idempotent.run(tx, () => run.inSlot(tx, log)) : run.inSlot(tx, log);
              }, options)
            : database.query((tx) => run.inSlot(tx, log), options),
        refusedForLostLock,
      );
      const used = run.usage();
      onUsage?.(used);
      this.logs.recordCall(record.id, handler, requestId, { kind, name, outcome: "ok", usage: used }, stamp);
      this.settled(record.id, stamp, kind, "ok", used);
      return { valueJson: result.value, usage: used, readSet: result.readSet, writeSet: result.writeSet };
    } catch (error) {
      const outcome = statusOf(error);
      const used = run.usage();
      onUsage?.(used);
      this.logs.recordCall(
        record.id,
        handler,
        requestId,
        { kind, name, outcome, usage: used, error: failureOf(error, run.failureStack()) },
        stamp,
      );
      this.settled(record.id, stamp, kind, outcome, used);
      throw error;
    }
  }

  /**
   * Counts a settled call in the host's metrics, unless its deployment was deleted since it began
   * (`stamp`): its series were dropped then, and a call settling afterwards made them anew, for
   * good (a developer deleting deployments with calls in flight grew every scrape without bound).
   */
  private settled(id: string, stamp: number, kind: string, outcome: string, used: CallUsage): void {
    if (!this.logs.deletedSince(id, stamp))
      this.observer.settled(id, kind, outcome, used.wallMs / 1000, used);
  }
}

/** The keys a mutation reads before its handler (its session, its idempotency records): its group reads them ahead. */
function readFirst(
  session: SessionProof | null | undefined,
  idempotent: IdempotentMutation | undefined,
): Buffer[] | undefined {
  const keys = [...(session ? [session.key] : []), ...(idempotent?.recordKeys() ?? [])];
  return keys.length > 0 ? keys : undefined;
}
