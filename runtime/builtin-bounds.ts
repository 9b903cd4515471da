/**
 * Built-ins V8 cannot stop midway, bounded before capsule code runs. V8 stops a handler between
 * steps of JavaScript; some built-ins loop in C++ over a length the caller chooses and never reach
 * such a step. Inline, the host's main thread waits for them and its watchdog ends the process
 * after 1.25 s; on an isolate's thread, isolated-vm gives up 5 s after the timeout and so does the
 * host (an attack review, 2026-12-06: `Array.prototype.includes.call({ length: 2 ** 40 }, 1)`,
 * one line, ended the host for every tenant). And a resizable `ArrayBuffer`'s memory is outside
 * the isolate's heap limit: `resize` grew one deployment by 512 MiB a call.
 */

const apply = Reflect.apply;
const construct = Reflect.construct;
const isArray = Array.isArray;
const defineProperty = Object.defineProperty;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const isConcatSpreadable = Symbol.isConcatSpreadable;

/**
 * The most elements a generic array method may walk. A dense array of 8 Mi numbers takes 64 MiB of
 * the isolate's 128 MiB heap, so a real array seldom comes near; past it, the walk is over a sparse
 * array's holes or an array-like's `length`, where each step costs a C++ lookup (0.3 s for 8 Mi on
 * an idle core, the slowest measured).
 */
export const MAX_WALKED_ELEMENTS = 2 ** 23;

/** Typed arrays longer than this sort through a JavaScript comparison, which V8 can stop. */
export const MAX_NATIVE_SORT_ELEMENTS = 2 ** 21;

/**
 * Array methods that walk their receiver's `length` where V8 cannot stop them: over holes they call
 * no capsule code between steps (each was tried on `{ length: 2 ** 40 }` under a 20 ms timeout;
 * `find`, `findIndex`, `findLast`, `findLastIndex` and the iterators stopped, these did not).
 */
const WALKING_METHODS = [
  "copyWithin",
  "every",
  "fill",
  "filter",
  "flat",
  "flatMap",
  "forEach",
  "includes",
  "indexOf",
  "join",
  "lastIndexOf",
  "map",
  "reduce",
  "reduceRight",
  "reverse",
  "shift",
  "slice",
  "some",
  "sort",
  "splice",
  "toLocaleString",
  "toReversed",
  "toSorted",
  "toSpliced",
  "unshift",
  "with",
] as const;

/** `value.length` as the array methods read it (ToLength). */
function lengthOf(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const length = Number((value as { length?: unknown }).length);
  if (!(length > 0)) return 0;
  return Math.min(Math.floor(length), Number.MAX_SAFE_INTEGER);
}

function tooLong(method: string, length: number): RangeError {
  return new RangeError(
    `Array.prototype.${method} on ${length} elements: capsules may walk at most ${MAX_WALKED_ELEMENTS} (a sparse array or an array-like object this long is refused; use a Map or an object keyed by index).`,
  );
}

/** A built-in method, called with its receiver as `this`. */
type Method = (this: unknown, ...args: unknown[]) => unknown;

/** Replaces `prototype[name]` by `make(original)`, keeping its name, length and attributes. */
function replace(prototype: object, name: string, make: (original: Method) => Method): void {
  const descriptor = getOwnPropertyDescriptor(prototype, name);
  if (!descriptor || typeof descriptor.value !== "function") return;
  const original = descriptor.value as Method;
  const wrapper = make(original);
  defineProperty(wrapper, "name", { value: original.name });
  defineProperty(wrapper, "length", { value: original.length });
  descriptor.value = wrapper;
  defineProperty(prototype, name, descriptor);
}

/** Bounds the generic array methods' walks by {@link MAX_WALKED_ELEMENTS}. */
function boundArrayWalks(): void {
  for (const name of WALKING_METHODS)
    replace(
      Array.prototype,
      name,
      (original) =>
        // A method, not an arrow: `this` is the receiver, as the original's.
        ({
          m(this: unknown, ...args: unknown[]) {
            // A real array's length is a plain number; an array-like's is read twice (here and by
            // the original), as a getter would see.
            const length = isArray(this) ? (this as unknown[]).length : lengthOf(this);
            if (length > MAX_WALKED_ELEMENTS) throw tooLong(name, length);
            return apply(original, this, args);
          },
        }).m,
    );
  replace(
    Array.prototype,
    "concat",
    (original) =>
      ({
        m(this: unknown, ...args: unknown[]) {
          let total = lengthOf(this);
          for (const arg of args) {
            const spread =
              arg !== null && typeof arg === "object"
                ? ((arg as { [isConcatSpreadable]?: unknown })[isConcatSpreadable] ?? isArray(arg))
                : false;
            total += spread ? lengthOf(arg) : 1;
          }
          if (total > MAX_WALKED_ELEMENTS) throw tooLong("concat", total);
          return apply(original, this, args);
        },
      }).m,
  );
}

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
  for (const name of ["sort", "toSorted"])
    replace(
      typedArrayPrototype,
      name,
      (original) =>
        ({
          m(this: unknown, compare?: unknown) {
            const long = compare === undefined && (this as Uint8Array).length > MAX_NATIVE_SORT_ELEMENTS;
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

/**
 * The longest string a replacement given as a string (not a function), or a global `match`, may
 * run over: their cost grows with the matches, in C++, about 370 ns each (`replaceAll("a", "bb")`
 * over 40 Mi characters held its thread 7.4 s). A function replacement calls JavaScript per match,
 * where V8 can stop it, and is never refused.
 */
export const MAX_REPLACED_CHARS = 2 ** 21;

/** The longest string `split` and `normalize` may walk (8 Mi characters: about 0.2 s each). */
export const MAX_SPLIT_CHARS = 2 ** 23;

function tooLongString(method: string, length: number, most: number, instead: string): RangeError {
  return new RangeError(
    `String.prototype.${method} on ${length} characters: capsules may run it over at most ${most}${instead}.`,
  );
}

/** Bounds the string methods V8 runs in C++ over the whole string, by its length. */
function boundStringWalks(): void {
  for (const name of ["replace", "replaceAll"])
    replace(
      String.prototype,
      name,
      (original) =>
        ({
          m(this: unknown, pattern: unknown, replacement: unknown) {
            if (
              typeof this === "string" &&
              this.length > MAX_REPLACED_CHARS &&
              typeof replacement !== "function"
            )
              throw tooLongString(
                name,
                this.length,
                MAX_REPLACED_CHARS,
                "; pass the replacement as a function",
              );
            return apply(original, this, [pattern, replacement]);
          },
        }).m,
    );
  replace(
    String.prototype,
    "match",
    (original) =>
      ({
        m(this: unknown, pattern: unknown) {
          if (typeof this === "string" && this.length > MAX_REPLACED_CHARS)
            throw tooLongString("match", this.length, MAX_REPLACED_CHARS, "; use matchAll");
          return apply(original, this, [pattern]);
        },
      }).m,
  );
  for (const name of ["split", "normalize"])
    replace(
      String.prototype,
      name,
      (original) =>
        ({
          m(this: unknown, ...args: unknown[]) {
            if (typeof this === "string" && this.length > MAX_SPLIT_CHARS)
              throw tooLongString(name, this.length, MAX_SPLIT_CHARS, "; work on slices of it");
            return apply(original, this, args);
          },
        }).m,
    );
}

/** Installs every bound above; runs once, before any capsule code. */
export function boundBuiltins(): void {
  boundArrayWalks();
  boundTypedArraySorts();
  boundStringWalks();
  fixedSizeArrayBuffers();
}
