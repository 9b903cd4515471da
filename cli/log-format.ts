import { budgetShares, CALL_USAGE_FIGURES, type CallUsage, printable } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { type Colors, noColors } from "./colors.js";
import { formatBytes, plural } from "./output.js";

/** A failed call's message and, in `platform dev`, its stack mapped to the capsule's source. */
export interface CallFailure {
  message: string;
  stack?: string;
}

/** One log line as the host sends it (`GET .../logs`, NDJSON) and `platform dev` follows it. */
export interface LogLine {
  time: string;
  level: string;
  handler: string;
  requestId: string;
  message: string;
  fields?: Record<string, unknown> | unknown[];
  /** The platform's line after each call: what ran, how it ended, what it used. */
  call?: { kind: string; name: string; outcome: string; usage: CallUsage; error?: CallFailure };
  /** True on the platform's own lines (a dashboard action), which no handler can write. */
  platform?: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether `value` has what {@link formatLogLine} shows of a line, each of its type. */
function isLogLine(value: unknown): value is LogLine {
  if (!isObject(value)) return false;
  for (const name of ["time", "level", "handler", "requestId", "message"])
    if (typeof value[name] !== "string") return false;
  // Any object a handler logged: an array too (the host keeps it as it came).
  if (value.fields !== undefined && (typeof value.fields !== "object" || value.fields === null)) return false;
  const call = value.call;
  if (call === undefined) return true;
  if (!isObject(call) || !isObject(call.usage)) return false;
  if (typeof call.kind !== "string" || typeof call.name !== "string" || typeof call.outcome !== "string")
    return false;
  const usage = call.usage;
  if (!CALL_USAGE_FIGURES.every((name) => typeof usage[name] === "number" && Number.isFinite(usage[name])))
    return false;
  const error = call.error;
  return (
    error === undefined ||
    (isObject(error) &&
      typeof error.message === "string" &&
      (error.stack === undefined || typeof error.stack === "string"))
  );
}

/**
 * One line of a host's log stream (`GET .../logs`), parsed and checked: what it shows must be of
 * the types it is shown as (a count that was text put escape codes on the terminal, and a line
 * that was not JSON ended `platform logs` with a stack trace echoing it). Anything else is an
 * error quoting the start of the line, escaped: no platform host sends one.
 */
export function parseLogLine(text: string): { line: LogLine; value: unknown } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw notALogLine(text, "is not JSON");
  }
  if (!isLogLine(value)) throw notALogLine(text, "is not a log line");
  return { line: value, value };
}

function notALogLine(text: string, what: string): PlatformError {
  const start = text.length > 80 ? `${text.slice(0, 80)}...` : text;
  return new PlatformError(
    "internal",
    `The host sent a line that ${what}, which no platform host sends: ${printable(start)}`,
  );
}

function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** A call's budget figures for humans: time, then each budget with its share of the limit. */
export function formatUsage(usage: CallUsage): string {
  const shares = budgetShares(usage);
  return [
    `${usage.wallMs.toFixed(1)} ms wall, ${usage.cpuMs.toFixed(1)} ms cpu (${percent(shares.cpuMs)})`,
    `returned ${usage.rowsReturned} (${percent(shares.rowsReturned)})`,
    `read ${usage.rowsRead} (${percent(shares.rowsRead)})`,
    `${formatBytes(usage.bytesRead)} (${percent(shares.bytesRead)})`,
    `ranges ${usage.rangesRead} (${percent(shares.rangesRead)})`,
    plural(usage.indexScans, "scan"),
    plural(usage.writes, "write"),
  ].join(" · ");
}

/**
 * The stack of a failure on the lines after its line, as a terminal shows a Node stack, no line
 * flush left (its frames are indented already): the stack may begin with the error's message,
 * which a handler (or a hostile host) can make several lines, and flush left one of them passed
 * for a log line of its own.
 */
function stackLines(error: CallFailure | undefined): string {
  if (!error?.stack) return "";
  const lines = error.stack.split("\n").map((line) => (/^\s/.test(line) ? "" : "  ") + printable(line));
  return `\n${lines.join("\n")}`;
}

/**
 * One line for humans: time, level, handler, request id, message, fields or budget figures; a
 * failed call's message after its outcome, and its stack (when the log has one) on the lines
 * below. `c` colours the level (warnings yellow, errors red) and dims the time and request id.
 */
export function formatLogLine(line: LogLine, c: Colors = noColors): string {
  const time = printable(line.time.slice(11, 23));
  const error = line.call?.error;
  const failure = error ? `: ${printable(error.message)}` : "";
  const fields = line.fields ? ` ${printable(JSON.stringify(line.fields))}` : "";
  const usage = line.call ? ` · ${printable(formatUsage(line.call.usage))}` : "";
  const level = printable(line.level.toUpperCase()).padEnd(5);
  const shown = line.level === "error" ? c.red(level) : line.level === "warn" ? c.yellow(level) : level;
  // `platform:dashboard`: no handler's name has a colon, so a capsule cannot write such a line.
  const handler = `${line.platform === true ? "platform:" : ""}${printable(line.handler)}`;
  return `${c.dim(time)} ${shown} ${handler} ${c.dim(`[${printable(line.requestId)}]`)} ${printable(line.message)}${failure}${fields}${usage}${stackLines(error)}`;
}

/**
 * `platform dev`'s line for one finished call: `query list ok 1.2 ms`, and for a failure its code,
 * message and stack: `mutation add handler_error 3.0 ms: Uncaught Error: boom` followed by
 * `    at add (server/index.ts:12:5)`. `c` dims the time and colours the outcome.
 */
export function formatCallSummary(
  time: string,
  call: NonNullable<LogLine["call"]>,
  c: Colors = noColors,
): string {
  const failed = call.outcome !== "ok";
  const outcome = failed ? c.red(printable(call.outcome)) : c.green(printable(call.outcome));
  const failure = call.error ? `: ${printable(call.error.message)}` : "";
  return `${c.dim(printable(time.slice(11, 23)))} ${printable(call.kind)} ${printable(call.name)} ${outcome} ${call.usage.wallMs.toFixed(1)} ms${failure}${stackLines(call.error)}`;
}
