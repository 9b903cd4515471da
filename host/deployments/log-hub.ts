import pino, { type DestinationStream } from "pino";
import { LIMITS, printableJsonText } from "../../sdk/protocol/index.js";
import type { HandlerLogEntry } from "../isolates/index.js";
import { cutCopy } from "../own-copy.js";
import { budgetWarning } from "./budget-warning.js";
import { HandlerStats } from "./handler-stats.js";
import {
  type CallFailure,
  type CallLine,
  type CallRecord,
  callLogLine,
  formatRequestId,
  type LogLine,
  type RequestId,
} from "./log-line.js";
import { LogRing } from "./log-ring.js";
import { handlerLogSink } from "./log-sink.js";

export type { CallFailure, CallRecord, LogLine, RequestId } from "./log-line.js";

type Listener = (line: LogLine) => void;

/** Turns a failed handler's bundle stack into one for its developer; undefined drops it. */
export type StackMapper = (stack: string) => string | undefined;

/**
 * How long a deletion is remembered for the calls begun before it: far longer than any call runs
 * (`LIMITS.handlerWallMs`), their last lines included.
 */
const FORGOTTEN_KEPT_MS = 10 * 60_000;

/**
 * Every handler log line of the host: written as JSON lines through pino (to stdout unless told
 * otherwise), kept in a ring of the last {@link LIMITS.logLinesKept} lines per deployment
 * for `platform logs`, and pushed to followers.
 */
export class LogHub {
  private readonly rings = new Map<string, LogRing>();
  /**
   * Deletions so far, and when (in that count) each deployment was last forgotten: lines and
   * figures of calls that began before are dropped, not kept for whoever creates that id next.
   * Entries go once no call begun before them can still run (see {@link FORGOTTEN_KEPT_MS}).
   */
  private forgets = 0;
  private readonly forgotten = new Map<string, { at: number; when: number }>();
  /** Each deployment's followers, with what ends each one's stream. */
  private readonly listeners = new Map<string, Map<Listener, () => void>>();
  private readonly stackMappers = new Map<string, StackMapper>();
  private readonly out: pino.Logger | undefined;
  /** Per-handler figures of the last hour (the dashboard's charts). */
  readonly stats = new HandlerStats();

  /**
   * `destination`: where lines are written as JSON (default stdout, holding at most
   * {@link LIMITS.logOutputBufferBytes} not yet written: past it lines are dropped, not kept in
   * the heap while a slow reader of stdout catches up; `false`: only kept).
   * `writeCalls`: whether the per-call budget lines go there too (`platform host`: an access log);
   * they are always kept for `platform logs`.
   */
  constructor(
    destination: DestinationStream | false = pino.destination({
      dest: 1,
      minLength: 0,
      maxLength: LIMITS.logOutputBufferBytes,
    }),
    private readonly writeCalls = true,
  ) {
    this.out =
      destination === false
        ? undefined
        : pino(
            {
              base: null,
              messageKey: "message",
              timestamp: pino.stdTimeFunctions.isoTime,
              // A tenant's message and fields reach the operator's terminal (`platform host`,
              // `platform dev`): JSON leaves U+009B (an escape prefix) and U+202E as they are.
              hooks: { streamWrite: printableJsonText },
            },
            destination,
          );
  }

  /** Resolves once every line written so far has reached the destination (before the process exits). */
  flush(): Promise<void> {
    const out = this.out;
    if (!out) return Promise.resolve();
    return new Promise((resolve) => out.flush(() => resolve()));
  }

  /** Records a line. */
  write(line: LogLine, fieldsChars?: number): void {
    if (this.writeCalls || (!line.call && !line.warning)) this.print(line);
    this.ring(line.deployment).push(line, fieldsChars);
    this.tell(line);
  }

  private print(line: LogLine): void {
    this.out?.[line.level](
      {
        deployment: line.deployment,
        handler: line.handler,
        requestId: line.requestId,
        ...(line.platform ? { platform: true } : {}),
        ...(line.fields ? { fields: line.fields } : {}),
        ...(line.call ? { call: withoutFailure(line.call) } : {}),
      },
      line.message,
    );
  }

  /**
   * How failed calls of `deployment` show their stack in its logs (`platform dev` maps bundle
   * positions to the capsule's source with the bundle's source map); `undefined` removes it.
   * Without one a failed call keeps only its message: a hosted deployment has no source map, and
   * bundle positions would help nobody.
   */
  mapStacks(deployment: string, mapper: StackMapper | undefined): void {
    if (mapper) this.stackMappers.set(deployment, mapper);
    else this.stackMappers.delete(deployment);
  }

  private tell(line: LogLine): void {
    for (const listener of this.listeners.get(line.deployment)?.keys() ?? []) listener(line);
  }

  private ring(deployment: string): LogRing {
    let ring = this.rings.get(deployment);
    if (!ring) {
      ring = new LogRing(deployment, LIMITS.logLinesKept, LIMITS.logCharsKept);
      this.rings.set(deployment, ring);
    }
    return ring;
  }

  /**
   * Forgets a deleted deployment's lines and figures, so a new deployment of that id starts empty,
   * and ends its followers' streams: they were allowed for the deleted deployment, and would
   * otherwise go on receiving the lines of whoever deploys that id next.
   */
  forget(deployment: string): void {
    const now = Date.now();
    for (const [id, { when }] of this.forgotten) {
      if (when > now - FORGOTTEN_KEPT_MS) break;
      this.forgotten.delete(id);
    }
    this.forgets++;
    this.forgotten.delete(deployment);
    this.forgotten.set(deployment, { at: this.forgets, when: now });
    this.rings.delete(deployment);
    this.stats.purgeDeployment(deployment);
    const followers = this.listeners.get(deployment);
    this.listeners.delete(deployment);
    for (const end of followers?.values() ?? []) end();
  }

  /**
   * A stamp for a call that starts now: passed back with its figures ({@link recordCall}), which
   * are dropped if its deployment was deleted since.
   */
  stamp(): number {
    return this.forgets;
  }

  /** Whether `deployment` was deleted since `stamp` was taken. */
  deletedSince(deployment: string, stamp: number): boolean {
    return (this.forgotten.get(deployment)?.at ?? 0) > stamp;
  }

  /** The kept lines of a deployment, oldest first. */
  recent(deployment: string): LogLine[] {
    return this.rings.get(deployment)?.recent() ?? [];
  }

  /**
   * Calls `listener` for every new line of `deployment` until the unsubscribe function it returns is
   * called, or until the deployment is deleted, which calls `end` instead.
   */
  follow(deployment: string, listener: Listener, end: () => void = () => {}): () => void {
    let followers = this.listeners.get(deployment);
    if (!followers) {
      followers = new Map();
      this.listeners.set(deployment, followers);
    }
    followers.set(listener, end);
    const mine = followers;
    return () => mine.delete(listener);
  }

  /**
   * Records one finished call: a line with its budget figures, and a warning line when it used
   * more than half of any budget (saying what to do about it). The ring keeps the call as numbers;
   * the line is only built when it is printed or followed. A failure's stack is replaced by what the
   * deployment's {@link StackMapper} makes of it (`call` is the caller's to give away).
   */
  recordCall(
    deployment: string,
    handler: string,
    request: RequestId,
    call: CallRecord,
    stamp = this.stamp(),
  ): void {
    if (this.deletedSince(deployment, stamp)) return;
    const entry: CallLine = {
      timeMs: Date.now(),
      handler,
      requestStartedMs: request.startedMs,
      requestSeq: request.seq,
      call,
    };
    const printed = this.out !== undefined && this.writeCalls;
    this.stats.record(deployment, handler, call.kind, call.outcome !== "ok", call.usage);
    if (call.error) {
      // Failures are rare and carry text: kept as a line object, outside the ring's columns.
      call.error = this.failure(deployment, call.error);
      const line = callLogLine(deployment, entry);
      this.ring(deployment).push(line);
      if (printed) this.print(line);
      this.tell(line);
    } else {
      this.ring(deployment).pushCall(entry);
      if (printed || this.listeners.get(deployment)?.size) {
        const line = callLogLine(deployment, entry);
        if (printed) this.print(line);
        this.tell(line);
      }
    }
    const warning = budgetWarning(call);
    if (warning)
      this.write({
        time: new Date(entry.timeMs).toISOString(),
        level: "warn",
        deployment,
        handler,
        requestId: formatRequestId(request.startedMs, request.seq),
        message: warning,
        warning: "budget",
      });
  }

  /** A failed call's message, with its stack only as the deployment's {@link StackMapper} shows it. */
  private failure(deployment: string, error: CallFailure): CallFailure {
    const mapper = this.stackMappers.get(deployment);
    const stack = error.stack === undefined || !mapper ? undefined : mapper(error.stack);
    const message = cutCopy(error.message, LIMITS.errorMessageChars);
    return stack === undefined ? { message } : { message, stack };
  }

  /**
   * A sink for one handler execution (see {@link handlerLogSink}): tags lines, enforces the log
   * limits, and redacts env values. Lines written after the deployment was deleted are dropped.
   */
  sink(
    deployment: string,
    handler: string,
    request: RequestId | string,
    env: Record<string, string>,
  ): (entry: HandlerLogEntry) => void {
    return handlerLogSink(this, deployment, handler, request, env);
  }
}

/**
 * A call record for the host's own log: without the failure's message and stack, which are the
 * tenant's text (the owner reads them through `platform logs`).
 */
function withoutFailure(call: CallRecord): CallRecord {
  if (!call.error) return call;
  const { error: _, ...rest } = call;
  return rest;
}
