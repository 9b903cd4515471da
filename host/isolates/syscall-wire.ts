import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { isPending } from "../db/index.js";
import { checkJsonShape } from "../json-shape.js";
import { EncodedAnswer } from "./encoded-answer.js";
import type { SlotTable } from "./inline/slot-table.js";
import type { RunningExecution, Transport } from "./transport.js";

/** A syscall's outcome before it is encoded for the isolate. */
export type SyscallResult =
  | { ok: true; value: unknown }
  | { ok: false; error: { code: string; message: string } };

/** A failed syscall's error as the isolate sees it: platform errors keep their code. */
export function wireError(error: unknown): { code: string; message: string } {
  if (isPlatformError(error)) return { code: error.code, message: error.message };
  return { code: "internal", message: "Internal error while serving a database call." };
}

/** A syscall's answer as the text the isolate decodes (rows are spliced in, not re-encoded). */
export function encodeSyscallResult(result: SyscallResult): string {
  if (result.ok && result.value instanceof EncodedAnswer) return result.value.text;
  return JSON.stringify(result);
}

/** A platform call read from the isolate, with the execution its request id names (if running). */
export interface ReadCall {
  requestId: unknown;
  op: unknown;
  args: unknown;
  execution: RunningExecution | undefined;
}

/**
 * Reads a platform call's JSON and finds the execution it names; refuses oversized calls, and
 * calls holding more objects and arrays than {@link LIMITS.syscallContainers}, or object members
 * than {@link LIMITS.jsonMembers}, before parsing them: parsing runs on the host's main thread, and
 * 8 MiB of `[{},{},...]` (2.8 million objects) held it for about half a second per call, 7 MB of
 * one object's 600,000 keys for 0.6 s.
 */
export function readCall(json: unknown, running: SlotTable<RunningExecution>): ReadCall {
  if (typeof json !== "string" || json.length > LIMITS.syscallBytes) {
    throw new PlatformError("bad_request", "A database call was too large.");
  }
  // The runtime writes the execution's number first: a call of an execution that ended (code a
  // handler left running) is refused before its up to 8 MiB are checked and parsed.
  const start = ENVELOPE_START.exec(json.slice(0, 32));
  const namedId = start ? Number(start[1]) : undefined;
  if (namedId !== undefined) {
    const named = running.get(namedId);
    if (!named || named.answered) throw notRunningError();
  }
  checkJsonShape(json, "A database call", LIMITS.syscallContainers, LIMITS.jsonMembers);
  const call = JSON.parse(json) as { requestId?: unknown; op?: unknown; args?: unknown };
  // A later `requestId` member would win in JSON.parse: the call is the execution its start names.
  if (namedId !== undefined && call.requestId !== namedId)
    throw new PlatformError("bad_request", "Malformed platform call.");
  const execution = typeof call.requestId === "number" ? running.get(call.requestId) : undefined;
  return { requestId: call.requestId, op: call.op, args: call.args, execution };
}

/** How the runtime's envelope of a platform call begins (runtime/bridge.ts `syscall`). */
const ENVELOPE_START = /^\{"requestId":(\d{1,15}),/;

/** The error of a platform call whose execution is not running (ended, or failed meanwhile). */
export function notRunningError(): PlatformError {
  return new PlatformError("forbidden", "This call does not belong to a running handler.");
}

/**
 * The execution that made `call`, which must be running on `transport` (the one the call came
 * through) and not have answered yet: a call from an ended execution, or forged for another one,
 * is refused.
 */
export function callerOf(call: ReadCall, transport: Transport): RunningExecution {
  const execution = call.execution;
  if (!execution || execution.transport !== transport || execution.answered) throw notRunningError();
  if (typeof call.op !== "string") throw new PlatformError("bad_request", "Malformed platform call.");
  return execution;
}

/**
 * Serves one platform call posted from inside an isolate on `transport`: its result when the host
 * has it at once (the inline transport then answers within the same entry), else a promise of it.
 * Never throws: a refused or failed call is an error result.
 */
export function serveCall(
  json: unknown,
  running: SlotTable<RunningExecution>,
  transport: Transport,
  /** The execution the transport itself says made the call (inline: the post's own argument). */
  postedFor?: number,
): SyscallResult | Promise<SyscallResult> {
  try {
    const call = readCall(json, running);
    if (postedFor !== undefined && call.requestId !== postedFor)
      throw new PlatformError("forbidden", "This call does not belong to a running handler.");
    const value = callerOf(call, transport).onSyscall(call.op as string, call.args);
    if (!isPending(value)) return { ok: true, value };
    return value.then(
      (ready): SyscallResult => ({ ok: true, value: ready }),
      (error): SyscallResult => ({ ok: false, error: wireError(error) }),
    );
  } catch (error) {
    return { ok: false, error: wireError(error) };
  }
}
