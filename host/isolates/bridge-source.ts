/**
 * The bridge's source as an isolate gets it before the runtime: the functions through which the
 * runtime posts platform calls and responses to the host (see runtime/bridge.ts), which run before
 * any capsule code and keep what they use.
 */
import { LIMITS } from "../../sdk/protocol/index.js";

/** A platform call refused inside the isolate, before its text is copied to the host. */
const refused = JSON.stringify({
  ok: false,
  error: {
    code: "too_large",
    message: `Too much data in platform calls at once: each call at most ${LIMITS.syscallBytes} characters, and ${LIMITS.syscallCharsInFlight} in all while they are in flight. Await calls before starting more.`,
  },
});

/**
 * The threaded bridge as the isolate gets it (`$0`: the host's Reference). isolated-vm copies a
 * call's text off the isolate's heap the moment the call is made, before the host reads it: one
 * handler that started 400 calls of 8 MiB without awaiting them grew the host by 3 GiB. So the
 * bridge refuses, inside the isolate and before any copy, a call over `LIMITS.syscallBytes` or one
 * that would put more than `LIMITS.syscallCharsInFlight` characters in flight at once. It runs
 * before capsule code and keeps what it uses (`Promise.prototype.then`, `Reflect.apply`, the
 * refusal's text), so patches by capsule code do not reach it. Compiled with the bridge, as the
 * inline bridge's functions are (see {@link INLINE_BRIDGE_SOURCE}); strict, as all of it is.
 */
const THREADED_BRIDGE_SOURCE = `const then = Promise.prototype.then;
    const apply = Reflect.apply;
    const resolved = Promise.resolve.bind(Promise);
    let inFlight = 0;
    globalThis.__platform_bridge = (function (json) {
      const chars = typeof json === "string" ? json.length : 0;
      if (chars === 0 || chars > ${LIMITS.syscallBytes} || inFlight + chars > ${LIMITS.syscallCharsInFlight}) return resolved(${JSON.stringify(refused)});
      inFlight += chars;
      const settle = () => { inFlight -= chars; };
      return apply(then, $0.apply(undefined, [json], { arguments: { copy: true }, result: { promise: true, copy: true } }), [
        (answer) => { settle(); return answer; },
        (error) => { settle(); throw error; },
      ]);
    });`;

/**
 * The inline bridge as the isolate gets it (`$1` to `$3`: the host's References). A call over
 * `LIMITS.syscallBytes` is refused inside the isolate, as the threaded bridge does: isolated-vm
 * copies its text onto the host's main thread before the host could look at its length. Each is a
 * parenthesized function expression, which V8 compiles with the bridge, while the blank isolate is
 * made: an arrow function waited to be compiled in the first request's entry.
 */
const INLINE_BRIDGE_SOURCE = `globalThis.__platform_inline_post = (function (requestId, callId, json) { return typeof json === "string" && json.length > ${LIMITS.syscallBytes} ? ${JSON.stringify(refused)} : $1.applySync(undefined, [requestId, callId, json], { result: { copy: true } }); });
      globalThis.__platform_inline_done = (function (requestId, wire) { return $2.applySync(undefined, [requestId, wire]); });
      globalThis.__platform_inline_turn = (function (requestId) { return $3.applySync(undefined, [requestId]); });`;

/**
 * Both bridges in one strict script (`$0` to `$3`: the host's References for threaded calls, inline
 * calls, inline responses and inline turns). Strict, so a stack trace hands none of its functions
 * to a capsule's `Error.prepareStackTrace` (V8 gives it only sloppy frames' functions).
 */
export const BRIDGE_SOURCE = `"use strict";
${THREADED_BRIDGE_SOURCE}
${INLINE_BRIDGE_SOURCE}`;
