/**
 * The isolate end of the syscall bridge. The host installs its functions on the global scope; this
 * module captures them and removes them before capsule code runs, so capsules can reach the host
 * only through `ctx`.
 *
 * Every platform call is one async function, `syscall`, with two transports chosen per execution:
 * - threaded (the isolate runs on its own thread): `__platform_bridge`, a `Reference.apply` with a
 *   promise result, JSON strings both ways;
 * - inline (the host entered the isolate synchronously on its main thread): the call is posted to
 *   the host synchronously. A call the host can answer at once (a point read, a log line) gets its
 *   answer as the post's result; otherwise the promise is settled when the host enters again
 *   through {@link resumeInline}. No thread hand-off on either side.
 */
import {
  type CrossingText,
  decodeSyscallAnswer,
  type SyscallArgs,
  type SyscallOp,
  unwrapText,
} from "../sdk/protocol/index.js";
import { type ErrorCode, PlatformError } from "../sdk/values/index.js";
import { type ExecutionState, resumeExecution } from "./determinism.js";
import { lazyRows } from "./lazy-rows.js";

type RawBridge = (json: string) => Promise<CrossingText>;
type InlinePost = (requestId: number, callId: number, json: string) => CrossingText | undefined;
type InlineDone = (requestId: number, responseJson: string) => void;
type InlineTurn = (requestId: number) => void;

const global = globalThis as Record<string, unknown>;
const raw = global.__platform_bridge as RawBridge | undefined;
const post = global.__platform_inline_post as InlinePost | undefined;
const done = global.__platform_inline_done as InlineDone | undefined;
const turn = global.__platform_inline_turn as InlineTurn | undefined;
delete global.__platform_bridge;
delete global.__platform_inline_post;
delete global.__platform_inline_done;
delete global.__platform_inline_turn;
/**
 * Captured before capsule code runs: a call's request id must be the one the runtime wrote. A
 * capsule that replaced `JSON.stringify` (or gave `Object.prototype` a `toJSON`) had its calls
 * carry another running execution's id, and served in its transaction (found by review).
 */
const stringify = JSON.stringify;

/** Inline calls waiting for the host's answer, by call id, with the execution each was made for. */
const waiting = new Map<number, { requestId: number; resolve: (responseJson: string) => void }>();
/** The ids in {@link waiting} of each inline execution's calls, by request id. */
const waitingOf = new Map<number, Set<number>>();
let nextCallId = 1;

/** The answer to a call of an execution that has ended, as the host gives it to any such call. */
const ENDED_CALL = JSON.stringify({
  ok: false,
  error: { code: "forbidden", message: "This call does not belong to a running handler." },
});

/** What to do (once) when an inline execution next hands control back to the host, by request id. */
const onHandBack = new Map<number, (finished: boolean) => void>();

/**
 * Runs `callback` once inline execution `requestId` next hands control back to the host: when it
 * makes a call the host cannot answer at once (in a microtask, once the execution has suspended),
 * or when it hands over its response (then at once, with `finished`). Replaces an earlier callback.
 */
export function whenHandedBack(requestId: number, callback: (finished: boolean) => void): void {
  onHandBack.set(requestId, callback);
}

/**
 * Tells the host that inline execution `requestId`'s turn in a run of one entry begins (see `inARow`
 * in index.ts): the CPU from here on is its own, and the host counts how far the run got. Not
 * needed after the one before handed over its response: the host knows then.
 */
export function beginTurn(requestId: number): void {
  turn?.(requestId);
}

/**
 * Drops every {@link whenHandedBack} callback: each belongs to one entry's run, which never goes on
 * in a later entry, and one for an execution that never handed back would keep its run's arguments.
 */
export function forgetHandBacks(): void {
  onHandBack.clear();
}

function inlineCall(requestId: number, json: string): string | Promise<string> {
  if (!post) throw new PlatformError("internal", "The platform bridge is missing.");
  const callId = nextCallId++;
  const answer = post(requestId, callId, json);
  if (answer !== undefined) return unwrapText(answer);
  const callback = onHandBack.get(requestId);
  if (callback) {
    // Once the execution has suspended, unless its response handed the turn on meanwhile.
    void Promise.resolve().then(() => {
      if (onHandBack.get(requestId) !== callback) return;
      onHandBack.delete(requestId);
      callback(false);
    });
  }
  let calls = waitingOf.get(requestId);
  if (!calls) {
    calls = new Set();
    waitingOf.set(requestId, calls);
  }
  calls.add(callId);
  return new Promise<string>((resolve) => waiting.set(callId, { requestId, resolve }));
}

/** The host's answer to inline call `callId` (the host enters the isolate to deliver it). */
export function resumeInline(callId: number, responseJson: string): void {
  const call = waiting.get(callId);
  if (!call) return;
  waiting.delete(callId);
  const calls = waitingOf.get(call.requestId);
  calls?.delete(callId);
  if (calls?.size === 0) waitingOf.delete(call.requestId);
  call.resolve(responseJson);
}

/**
 * Hands an inline execution's final response to the host. Its calls still in flight end with it,
 * refused as any call of an ended execution is: code awaiting one (a handler may keep another's
 * `ctx`) goes on now, in a turn the host charges, not when the host's answer comes.
 */
export function finishInline(requestId: number, responseJson: string): void {
  const calls = waitingOf.get(requestId);
  if (calls) {
    waitingOf.delete(requestId);
    for (const callId of calls) {
      const call = waiting.get(callId);
      waiting.delete(callId);
      call?.resolve(ENDED_CALL);
    }
  }
  done?.(requestId, responseJson);
  const callback = onHandBack.get(requestId);
  if (callback) {
    onHandBack.delete(requestId);
    callback(true);
  }
}

/**
 * `ctx.log` calls in flight, by request id: a handler's answer waits for them (see dispatch). A
 * request is open from its start (no calls yet: `undefined`) until it answers.
 */
const logCalls = new Map<number, Promise<unknown>[] | undefined>();

/** Starts tracking request `requestId`'s log calls. */
export function openLogCalls(requestId: number): void {
  logCalls.set(requestId, undefined);
}

/** Records a log call of request `requestId` (ignored once the request has answered). */
export function trackLogCall(requestId: number, call: Promise<unknown>): void {
  if (!logCalls.has(requestId)) return;
  const calls = logCalls.get(requestId);
  if (calls) calls.push(call);
  else logCalls.set(requestId, [call]);
}

/**
 * Closes request `requestId`'s log calls; a promise when some are still in flight, so its lines
 * are recorded before its result on both transports, and a run that is abandoned and run again
 * logs nothing.
 */
export function settleLogCalls(requestId: number): Promise<unknown> | undefined {
  const calls = logCalls.get(requestId);
  logCalls.delete(requestId);
  return calls ? Promise.all(calls) : undefined;
}

/**
 * Calls host op `op` for request `requestId`; rejects with a {@link PlatformError} on failure.
 * Re-enters the execution's deterministic state before user code continues.
 */
export async function syscall<Op extends SyscallOp>(
  execution: ExecutionState,
  requestId: number,
  op: Op,
  args: SyscallArgs[Op],
): Promise<unknown> {
  // The envelope is written here, not stringified: no `toJSON` of the capsule's reaches it.
  const argsJson = stringify(args) as string | undefined;
  const json = `{"requestId":${requestId},"op":${stringify(op)}${argsJson === undefined ? "" : `,"args":${argsJson}`}}`;
  let text: string;
  if (execution.inline) text = await inlineCall(requestId, json);
  else if (raw) text = unwrapText(await raw(json));
  else throw new PlatformError("internal", "The platform bridge is missing.");
  resumeExecution(execution);
  const answer = decodeSyscallAnswer(text);
  if (answer.kind === "rows") return lazyRows(answer.rowsJson, answer.count);
  if (answer.kind === "page")
    return {
      page: lazyRows(answer.rowsJson, answer.count),
      isDone: answer.isDone,
      continueCursor: answer.continueCursor,
    };
  const response = answer.response;
  if (response.ok) return response.value;
  throw new PlatformError(response.error.code as ErrorCode, response.error.message);
}
