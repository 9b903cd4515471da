import pino, { type DestinationStream } from "pino";
import {
  BUDGET_WARNING_SHARE,
  BUDGETS,
  type BudgetKey,
  budgetShares,
  type CallUsage,
} from "../../sdk/protocol/index.js";
import type { HandlerLogEntry } from "../isolates/index.js";

/** One handler execution as the logs show it: what ran, how it ended, what it used. */
export interface CallRecord {
  kind: "query" | "mutation" | "endpoint" | "guestUpgrade";
  name: string;
  /** `ok`, or the error code it failed with. */
  outcome: string;
  usage: CallUsage;
}

/** One stored log line of a deployment. */
export interface LogLine {
  time: string;
  level: "info" | "warn" | "error";
  deployment: string;
  handler: string;
  requestId: string;
  message: string;
  fields?: Record<string, unknown>;
  /** Present on the line the platform writes after each call: its budget figures. */
  call?: CallRecord;
  /** Set on the platform's warning that a call used more than half of a budget. */
  warning?: "budget";
}

/** Limits of `ctx.log` per handler execution. */
export const LOG_LIMITS = {
  linesPerHandler: 100,
  messageChars: 4096,
  fieldsChars: 16 * 1024,
  keptPerDeployment: 1000,
} as const;

type Listener = (line: LogLine) => void;

let isoMs = 0;
let isoText = new Date(0).toISOString();

/** The current time as an ISO string; formatted once per millisecond, however many lines share it. */
function isoNow(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoText = new Date(now).toISOString();
  }
  return isoText;
}

/** Replaces every env value (of 4 characters or more) in `text` by `[redacted]`. */
export function redactSecrets(text: string, env: Record<string, string>): string {
  let out = text;
  for (const secret of Object.values(env)) if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  return out;
}

/**
 * Every handler log line of the host: written as JSON lines through pino (to stdout unless told
 * otherwise), kept in a ring of the last {@link LOG_LIMITS.keptPerDeployment} lines per deployment
 * for `platform logs`, and pushed to followers.
 */
export class LogHub {
  private readonly rings = new Map<string, LogLine[]>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly out: pino.Logger | undefined;

  /**
   * `destination`: where lines are written as JSON (default stdout; `false`: only kept).
   * `writeCalls`: whether the per-call budget lines go there too (`platform host`: an access log);
   * they are always kept for `platform logs`.
   */
  constructor(
    destination: DestinationStream | false = pino.destination(1),
    private readonly writeCalls = true,
  ) {
    this.out =
      destination === false
        ? undefined
        : pino({ base: null, messageKey: "message", timestamp: pino.stdTimeFunctions.isoTime }, destination);
  }

  /** Records a line. */
  write(line: LogLine): void {
    if (this.writeCalls || (!line.call && !line.warning))
      this.out?.[line.level](
        {
          deployment: line.deployment,
          handler: line.handler,
          requestId: line.requestId,
          ...(line.fields ? { fields: line.fields } : {}),
          ...(line.call ? { call: line.call } : {}),
        },
        line.message,
      );
    let ring = this.rings.get(line.deployment);
    if (!ring) {
      ring = [];
      this.rings.set(line.deployment, ring);
    }
    ring.push(line);
    // Trimmed in batches (the ring holds up to twice the kept lines), not one shift per line.
    if (ring.length >= 2 * LOG_LIMITS.keptPerDeployment)
      ring.splice(0, ring.length - LOG_LIMITS.keptPerDeployment);
    for (const listener of this.listeners.get(line.deployment) ?? []) listener(line);
  }

  /** The kept lines of a deployment, oldest first. */
  recent(deployment: string): LogLine[] {
    return (this.rings.get(deployment) ?? []).slice(-LOG_LIMITS.keptPerDeployment);
  }

  /** Calls `listener` for every new line of `deployment`; returns the unsubscribe function. */
  follow(deployment: string, listener: Listener): () => void {
    let set = this.listeners.get(deployment);
    if (!set) {
      set = new Set();
      this.listeners.set(deployment, set);
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Records one finished call: a line with its budget figures, and a warning line when it used
   * more than half of any budget (saying what to do about it).
   */
  recordCall(deployment: string, handler: string, requestId: string, call: CallRecord): void {
    const time = isoNow();
    this.write({
      time,
      level: call.outcome === "ok" ? "info" : "warn",
      deployment,
      handler,
      requestId,
      message: `${call.kind} ${call.name} ${call.outcome}`,
      call,
    });
    const warning = budgetWarning(call);
    if (warning)
      this.write({
        time,
        level: "warn",
        deployment,
        handler,
        requestId,
        message: warning,
        warning: "budget",
      });
  }

  /**
   * A sink for one handler execution: tags lines, enforces {@link LOG_LIMITS}, and replaces every
   * server-only env value by `[redacted]` so secrets never reach the logs through the platform.
   */
  sink(
    deployment: string,
    handler: string,
    requestId: string,
    env: Record<string, string>,
  ): (entry: HandlerLogEntry) => void {
    const scrub = (text: string) => redactSecrets(text, env);
    let count = 0;
    return (entry) => {
      count++;
      if (count > LOG_LIMITS.linesPerHandler) {
        if (count === LOG_LIMITS.linesPerHandler + 1) {
          this.write({
            time: isoNow(),
            level: "warn",
            deployment,
            handler,
            requestId,
            message: `log limit reached: further lines of this call are dropped (${LOG_LIMITS.linesPerHandler} per call)`,
          });
        }
        return;
      }
      let fields: Record<string, unknown> | undefined;
      if (entry.fields) {
        const json = scrub(JSON.stringify(entry.fields));
        fields =
          json.length > LOG_LIMITS.fieldsChars
            ? { truncated: json.slice(0, LOG_LIMITS.fieldsChars) }
            : (JSON.parse(json) as Record<string, unknown>);
      }
      this.write({
        time: isoNow(),
        level: entry.level,
        deployment,
        handler,
        requestId,
        message: scrub(entry.message).slice(0, LOG_LIMITS.messageChars),
        ...(fields ? { fields } : {}),
      });
    };
  }
}

const ADVICE: Record<BudgetKey, string> = {
  rowsReturned: "return fewer rows: take(n), or paginate() across calls",
  rowsRead:
    "read fewer index entries: an index with an equality prefix, take(n), paginate(), or counts stored next to the rows instead of count()",
  bytesRead: "read fewer or smaller rows: take(n), paginate(), or keep large values out of listed rows",
  cpuMs: "do less work per call: move heavy computation out of the handler or split it",
};

const BUDGET_KEYS = Object.keys(BUDGETS) as BudgetKey[];

/** The warning for a call above {@link BUDGET_WARNING_SHARE} of any budget, or undefined. */
function budgetWarning(call: CallRecord): string | undefined {
  // Nearly every call is far below every budget: the shares are worked out only for a warning.
  const over = BUDGET_KEYS.filter((key) => call.usage[key] > BUDGETS[key] * BUDGET_WARNING_SHARE);
  if (over.length === 0) return undefined;
  const shares = budgetShares(call.usage);
  over.sort((a, b) => shares[b] - shares[a]);
  const used = over
    .map(
      (key) =>
        `${Math.round(shares[key] * 100)}% of ${key} (${Math.round(call.usage[key])} of ${BUDGETS[key]})`,
    )
    .join(", ");
  return `${call.kind} ${call.name} used ${used}: ${ADVICE[over[0] as BudgetKey]}.`;
}
