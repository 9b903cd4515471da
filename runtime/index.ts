/**
 * The isolate runtime: loaded as one script into every isolate before the capsule bundle. It locks
 * down code generation, installs determinism, captures the bridge, and exposes the entry points the
 * host takes references to (and then deletes from the global scope): the threaded dispatcher, the
 * inline dispatcher (one start, or several in a row), and the inline resume (one answer, or several
 * in a row).
 */

import { type CrossingText, unwrapText } from "../sdk/protocol/index.js";
import { beginTurn, finishInline, forgetHandBacks, resumeInline, whenHandedBack } from "./bridge.js";
import { boundBuiltins } from "./builtin-bounds.js";
import { installConsole } from "./console.js";
import { installDeterminism } from "./determinism.js";
import { dispatch } from "./dispatch.js";
import { lockDownCodeGeneration } from "./lockdown.js";

lockDownCodeGeneration();
installDeterminism();
boundBuiltins();
installConsole();
const global = globalThis as Record<string, unknown>;
/**
 * Every entry point below starts an entry of the host's into this isolate: what a run of an earlier
 * entry waited for is forgotten, so a run of starts or answers (see {@link inARow}) goes on only
 * within its own entry.
 */
function enter(): void {
  forgetHandBacks();
}

// The host hands long strings in wrapped (sdk/protocol/crossing-text.ts).
global.__platform_dispatch = (requestId: number, requestJson: CrossingText): Promise<string> => {
  enter();
  return dispatch(requestId, unwrapText(requestJson), false);
};

/** Starts inline execution `requestId`; it hands its response to the host when done. */
function dispatchInline(requestId: number, requestJson: string): void {
  void dispatch(requestId, requestJson, true).then((responseJson) => finishInline(requestId, responseJson));
}

global.__platform_dispatch_inline = (requestId: number, requestJson: CrossingText): void => {
  enter();
  dispatchInline(requestId, unwrapText(requestJson));
};

/**
 * Hands `count` inline executions (the `i`th is `requestOf(i)`) their next step, `begin(i)`, one
 * after another within this entry: the next begins (the host is told: {@link beginTurn}) once the
 * one before hands control back to the host (it waits on a call the host cannot answer at once, or
 * has answered), so each runs alone until then, with its own clock and random state. One that does
 * neither (it awaits something else) ends the run: the host sees how far it got and enters the
 * others again, and the run never goes on in a later entry (which would hand them their step
 * twice: the next entry forgets its callback).
 */
function inARow(count: number, requestOf: (i: number) => number, begin: (i: number) => void): void {
  let next = 0;
  const beginNext = (afterResponse: boolean): void => {
    if (next >= count) return;
    const i = next++;
    const requestId = requestOf(i);
    // The entry began with the first one's turn; the host saw a response hand the turn on.
    if (i > 0 && !afterResponse) beginTurn(requestId);
    whenHandedBack(requestId, beginNext);
    begin(i);
  };
  beginNext(false);
}

/** Several inline starts in one entry, as (request id, request) pairs, run in a row (see {@link inARow}). */
global.__platform_dispatch_inline_many = (...pairs: unknown[]): void => {
  enter();
  inARow(
    Math.floor(pairs.length / 2),
    (i) => pairs[2 * i] as number,
    (i) => dispatchInline(pairs[2 * i] as number, unwrapText(pairs[2 * i + 1])),
  );
};

/**
 * Answers to several inline executions' calls in one entry, as (request id, call id, answer)
 * triples, one execution each, handed over in a row (see {@link inARow}).
 */
global.__platform_resume_inline_many = (...triples: unknown[]): void => {
  enter();
  inARow(
    Math.floor(triples.length / 3),
    (i) => triples[3 * i] as number,
    (i) => resumeInline(triples[3 * i + 1] as number, unwrapText(triples[3 * i + 2])),
  );
};

global.__platform_resume_inline = (callId: number, responseJson: CrossingText): void => {
  enter();
  resumeInline(callId, unwrapText(responseJson));
};
