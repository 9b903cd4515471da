/**
 * Built-ins V8 cannot stop midway, bounded before capsule code runs. V8 stops a handler between
 * steps of JavaScript; some built-ins loop in C++ over a length the caller chooses and never reach
 * such a step. Inline, the host's main thread waits for them and its watchdog ends the process
 * after 1.25 s; on an isolate's thread, isolated-vm gives up 5 s after the timeout and so does the
 * host (an attack review, 2026-12-06: `Array.prototype.includes.call({ length: 2 ** 40 }, 1)`,
 * one line, ended the host for every tenant). And a resizable `ArrayBuffer`'s memory is outside
 * the isolate's heap limit: `resize` grew one deployment by 512 MiB a call.
 */

import { boundArrayWalks } from "./array-bounds.js";
import { replaceConstructor } from "./builtin-wrap.js";
import { boundArgumentLists } from "./call-bounds.js";
import { boundJsonReviver } from "./callback-bounds.js";
import { boundLocaleLists } from "./locale-bounds.js";
import { trackProxies } from "./plain-arrays.js";
import { boundStringWalks } from "./string-bounds.js";
import { boundTextWalks } from "./text-bounds.js";
import { boundTypedArrays } from "./typed-array-bounds.js";

export { MAX_WALKED_ELEMENTS } from "./array-bounds.js";
export { MAX_ARGUMENTS } from "./call-bounds.js";
export { MAX_LOCALES } from "./locale-bounds.js";
export { MAX_REPLACED_CHARS, MAX_SPLIT_CHARS } from "./string-bounds.js";
export { MAX_NATIVE_SORT_ELEMENTS, numericOrder } from "./typed-array-bounds.js";

/**
 * `ArrayBuffer` without resizing: the constructor refuses `maxByteLength` (a resizable buffer
 * reserves that much outside the heap even unused), and `resize` and the `transfer` methods are
 * gone. Installed as the global and as `ArrayBuffer.prototype.constructor`, so no constructor
 * chain reaches the real one; subclasses work (`new.target` is kept).
 */
function fixedSizeArrayBuffers(): void {
  const prototype = ArrayBuffer.prototype as unknown as Record<string, unknown>;
  for (const name of ["resize", "transfer", "transferToFixedLength"]) delete prototype[name];
  replaceConstructor(globalThis, "ArrayBuffer", (args) => {
    const options = args[1];
    if (options !== null && typeof options === "object" && "maxByteLength" in options)
      throw new RangeError(
        "Resizable ArrayBuffers are not available in capsules: their memory is outside the isolate's limit.",
      );
    return [args[0]];
  });
}

export function boundBuiltins(): void {
  trackProxies();
  boundArrayWalks();
  boundArgumentLists();
  boundTypedArrays();
  boundStringWalks();
  boundLocaleLists();
  boundTextWalks();
  boundJsonReviver();
  fixedSizeArrayBuffers();
}
