import { LIMITS } from "../../sdk/protocol/index.js";
import type { HandlerLogEntry } from "../isolates/index.js";
import { loggedFields } from "./log-fields.js";
import { formatRequestId, isoNow, type LogLine, type RequestId } from "./log-line.js";
import { redactSecrets } from "./redact.js";

/** What a handler's log sink needs of the log hub (log-hub.ts). */
export interface SinkTarget {
  write(line: LogLine, fieldsChars?: number): void;
  stamp(): number;
  deletedSince(deployment: string, stamp: number): boolean;
}

/**
 * A sink for one handler execution's `ctx.log` lines: tags them, enforces the log limits of
 * `LIMITS` (lines and characters per call), and replaces every server-only env value by
 * `[redacted]` so secrets never reach the logs through the platform. Lines written after the
 * deployment was deleted are dropped (see `LogHub.stamp`). A line never fails its call.
 */
export function handlerLogSink(
  hub: SinkTarget,
  deployment: string,
  handler: string,
  request: RequestId | string,
  env: Record<string, string>,
): (entry: HandlerLogEntry) => void {
  let requestId = typeof request === "string" ? request : "";
  let count = 0;
  let chars = 0;
  const stamp = hub.stamp();
  const line = (level: LogLine["level"], message: string, kept?: ReturnType<typeof loggedFields>) => {
    if (hub.deletedSince(deployment, stamp)) return;
    hub.write(
      {
        time: isoNow(),
        level,
        deployment,
        handler,
        requestId,
        message,
        ...(kept ? { fields: kept.fields } : {}),
      },
      kept?.chars,
    );
  };
  const write = (entry: HandlerLogEntry) => {
    count++;
    if (requestId === "" && typeof request !== "string")
      requestId = formatRequestId(request.startedMs, request.seq);
    if (count > LIMITS.logLinesPerHandler) {
      if (count === LIMITS.logLinesPerHandler + 1)
        line(
          "warn",
          `log limit reached: further lines of this call are dropped (${LIMITS.logLinesPerHandler} per call)`,
        );
      return;
    }
    if (chars > LIMITS.logCharsPerHandler) return;
    const kept = entry.fields ? loggedFields(entry.fields, env) : undefined;
    const message = redactSecrets(String(entry.message), env, LIMITS.logMessageChars);
    chars += message.length + (kept?.chars ?? 0);
    if (chars > LIMITS.logCharsPerHandler) {
      line(
        "warn",
        `log limit reached: further lines of this call are dropped (${LIMITS.logCharsPerHandler} characters per call)`,
      );
      return;
    }
    line(entry.level, message, kept);
  };
  // A log line must never fail its call: the sink also runs after a mutation committed.
  return (entry) => {
    try {
      write(entry);
    } catch {
      line("warn", "a log line of this call could not be recorded and was dropped");
    }
  };
}
