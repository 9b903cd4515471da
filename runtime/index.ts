/**
 * The isolate runtime: loaded as one script into every isolate before the capsule bundle. It locks
 * down code generation, installs determinism, captures the bridge, and exposes the entry points the
 * host takes references to (and then deletes from the global scope): the threaded dispatcher, the
 * inline dispatcher (one start, or several in a row), and the inline resume.
 */

import { type CrossingText, unwrapText } from "../sdk/protocol/index.js";
import { finishInline, forgetWaiting, resumeInline, whenWaiting } from "./bridge.js";
import { installDeterminism } from "./determinism.js";
import { dispatch } from "./dispatch.js";
import { lockDownCodeGeneration } from "./lockdown.js";

lockDownCodeGeneration();
installDeterminism();
const global = globalThis as Record<string, unknown>;
/**
 * Counts the host's entries into this isolate (every entry point below starts one). A run of
 * starts (`__platform_dispatch_inline_many`) goes on only within its own entry.
 */
let entries = 0;

// The host hands long strings in wrapped (sdk/protocol/crossing-text.ts).
global.__platform_dispatch = (requestId: number, requestJson: CrossingText): Promise<string> => {
  entries++;
  return dispatch(requestId, unwrapText(requestJson), false);
};

/** Starts inline execution `requestId`; `then` runs once it has handed its response to the host. */
function dispatchInline(requestId: number, requestJson: string, then?: () => void): void {
  void dispatch(requestId, requestJson, true).then((responseJson) => {
    finishInline(requestId, responseJson);
    then?.();
  });
}

global.__platform_dispatch_inline = (requestId: number, requestJson: CrossingText): void => {
  entries++;
  dispatchInline(requestId, unwrapText(requestJson));
};

/**
 * Several inline starts in one entry, as (request id, request) pairs, run one after another: the
 * next starts once the one before has finished or waits on the host, so a handler runs alone from
 * its start until then, with its own clock and random state. A handler that does neither (it awaits
 * something that never settles) ends the run: the host sees which started and enters the others
 * again, and the run never resumes in a later entry (which would start them twice).
 */
global.__platform_dispatch_inline_many = (...pairs: unknown[]): void => {
  const entry = ++entries;
  let next = 0;
  const startNext = (): void => {
    if (entry !== entries || next + 1 >= pairs.length) return;
    const requestId = pairs[next] as number;
    const requestJson = unwrapText(pairs[next + 1]);
    next += 2;
    let moved = false;
    const moveOn = (): void => {
      if (moved) return;
      moved = true;
      forgetWaiting(requestId);
      startNext();
    };
    whenWaiting(requestId, moveOn);
    dispatchInline(requestId, requestJson, moveOn);
  };
  startNext();
};

global.__platform_resume_inline = (callId: number, responseJson: CrossingText): void => {
  entries++;
  resumeInline(callId, unwrapText(responseJson));
};
