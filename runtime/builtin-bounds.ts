/**
 * Built-ins V8 cannot stop midway, bounded before capsule code runs. V8 stops a handler between
 * steps of JavaScript; some built-ins loop in C++ over a length the caller chooses and never reach
 * such a step. Inline, the host's main thread waits for them and its watchdog ends the process
 * after 1.25 s; on an isolate's thread, isolated-vm gives up 5 s after the timeout and so does the
 * host (an attack review, 2026-12-06: `Array.prototype.includes.call({ length: 2 ** 40 }, 1)`,
 * one line, ended the host for every tenant). And a resizable `ArrayBuffer`'s memory is outside
 * the isolate's heap limit: `resize` grew one deployment by 512 MiB a call.
 */

import { boundArrayWalks, trackProxies } from "./array-bounds.js";
import { apply, type Method, replaceBuiltin as replace } from "./builtin-wrap.js";
import { boundStringWalks } from "./string-bounds.js";

export { MAX_WALKED_ELEMENTS } from "./array-bounds.js";
export { MAX_REPLACED_CHARS, MAX_SPLIT_CHARS } from "./string-bounds.js";

const construct = Reflect.construct;
const defineProperty = Object.defineProperty;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;

/** Typed arrays longer than this sort through a JavaScript comparison, which V8 can stop. */
export const MAX_NATIVE_SORT_ELEMENTS = 2 ** 21;
/**
 * The order a typed array's own sort gives (numbers ascending, -0 before +0, NaN last), as a
 * comparison V8 calls, and so can stop between calls.
 */
export function numericOrder(a: number | bigint, b: number | bigint): number {
  const aNaN = typeof a === "number" && Number.isNaN(a);
  const bNaN = typeof b === "number" && Number.isNaN(b);
  if (aNaN) return bNaN ? 0 : 1;
  if (bNaN) return -1;
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === 0 && b === 0) {
    const aNegative = 1 / (a as number) < 0;
    const bNegative = 1 / (b as number) < 0;
    return aNegative === bNegative ? 0 : aNegative ? -1 : 1;
  }
  return 0;
}

/** Sorts long typed arrays without a comparator through {@link numericOrder}. */
function boundTypedArraySorts(): void {
  const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
  // The real length, not one a subclass or an own property reports (found by the fixes' review).
  const lengthOfTyped = getOwnPropertyDescriptor(typedArrayPrototype, "length")?.get as Method;
  for (const name of ["sort", "toSorted"])
    replace(
      typedArrayPrototype,
      name,
      (original) =>
        ({
          m(this: unknown, compare?: unknown) {
            const long =
              compare === undefined && (apply(lengthOfTyped, this, []) as number) > MAX_NATIVE_SORT_ELEMENTS;
            return apply(original, this, [long ? numericOrder : compare]);
          },
        }).m,
    );
}

/**
 * `ArrayBuffer` without resizing: the constructor refuses `maxByteLength` (a resizable buffer
 * reserves that much outside the heap even unused), and `resize` and the `transfer` methods are
 * gone. Installed as the global and as `ArrayBuffer.prototype.constructor`, so no constructor
 * chain reaches the real one; subclasses work (`new.target` is kept).
 */
function fixedSizeArrayBuffers(): void {
  const RealArrayBuffer = ArrayBuffer;
  const prototype = RealArrayBuffer.prototype as unknown as Record<string, unknown>;
  for (const name of ["resize", "transfer", "transferToFixedLength"]) delete prototype[name];
  const fixed = function (this: unknown, length?: unknown, options?: unknown) {
    if (!new.target) throw new TypeError("Constructor ArrayBuffer requires 'new'");
    if (options !== null && typeof options === "object" && "maxByteLength" in options)
      throw new RangeError(
        "Resizable ArrayBuffers are not available in capsules: their memory is outside the isolate's limit.",
      );
    return construct(RealArrayBuffer, [length], new.target);
  } as unknown as ArrayBufferConstructor;
  defineProperty(fixed, "name", { value: "ArrayBuffer" });
  defineProperty(fixed, "prototype", { value: RealArrayBuffer.prototype });
  defineProperty(fixed, "isView", {
    value: RealArrayBuffer.isView,
    writable: true,
    configurable: true,
  });
  defineProperty(prototype, "constructor", { value: fixed, writable: true, configurable: true });
  defineProperty(globalThis, "ArrayBuffer", { value: fixed, writable: true, configurable: true });
}

export function boundBuiltins(): void {
  trackProxies();
  boundArrayWalks();
  boundTypedArraySorts();
  boundStringWalks();
  fixedSizeArrayBuffers();
}
