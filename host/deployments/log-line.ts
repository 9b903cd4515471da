import type { CallUsage } from "../../sdk/protocol/index.js";

/** One handler execution as the logs show it: what ran, how it ended, what it used. */
export interface CallRecord {
  kind: "query" | "mutation" | "endpoint" | "guestUpgrade";
  name: string;
  /** `ok`, or the error code it failed with. */
  outcome: string;
  usage: CallUsage;
  /** A failed call's message, and where it failed (see `LogHub.mapStacks`); absent when ok. */
  error?: CallFailure;
}

/**
 * Why a call failed, for its developer: the message the caller got (5xx codes the caller only sees
 * as "Internal error." keep that text here too) and, in `platform dev`, the handler's stack mapped
 * to the capsule's source. The host's own log never carries it.
 */
export interface CallFailure {
  message: string;
  stack?: string;
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
  /**
   * Set on the lines the platform writes itself (what was done through the dashboard, a sign-in
   * code with no SMTP, an unfinished import or removal), which no handler's line carries: a
   * capsule's query named `dashboard` or `auth` wrote lines that read exactly like them (an
   * attack review).
   */
  platform?: true;
}

/** A request id as the logs show it: its start (ms, base 36) and the host's call counter. */
export function formatRequestId(startedMs: number, seq: number): string {
  return `${startedMs.toString(36)}-${seq.toString(36)}`;
}

/** One finished call, before it is a {@link LogLine}: how the log ring keeps it. */
export interface CallLine {
  timeMs: number;
  handler: string;
  /** {@link formatRequestId}'s parts. */
  requestStartedMs: number;
  requestSeq: number;
  call: CallRecord;
}

/** A call's budget line: `<kind> <name> <outcome>`, with the call's figures. */
export function callLogLine(deployment: string, line: CallLine): LogLine {
  return {
    time: new Date(line.timeMs).toISOString(),
    level: line.call.outcome === "ok" ? "info" : "warn",
    deployment,
    handler: line.handler,
    requestId: formatRequestId(line.requestStartedMs, line.requestSeq),
    message: `${line.call.kind} ${line.call.name} ${line.call.outcome}`,
    call: line.call,
  };
}

/** A call's request id in parts (formatted by {@link formatRequestId} only when a line shows it). */
export interface RequestId {
  startedMs: number;
  seq: number;
}

let isoMs = 0;
let isoText = new Date(0).toISOString();

/** The current time as an ISO string; formatted once per millisecond, however many lines share it. */
export function isoNow(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoText = new Date(now).toISOString();
  }
  return isoText;
}
