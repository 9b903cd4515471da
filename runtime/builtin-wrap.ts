/**
 * Replacing a built-in method with a wrapper that looks like it (its name, length and property
 * attributes), for the bounds in builtin-bounds.ts, array-bounds.ts and string-bounds.ts.
 */

/** A built-in method, called with its receiver as `this`. */
export type Method = (this: unknown, ...args: unknown[]) => unknown;

export const apply = Reflect.apply;
const defineProperty = Object.defineProperty;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;

/** Replaces `holder[name]` by `make(original)`, keeping its name, length and attributes. */
export function replaceBuiltin(
  holder: object,
  name: string | symbol,
  make: (original: Method) => Method,
): void {
  const descriptor = getOwnPropertyDescriptor(holder, name);
  if (!descriptor || typeof descriptor.value !== "function") return;
  const original = descriptor.value as Method;
  const wrapper = make(original);
  defineProperty(wrapper, "name", { value: original.name });
  defineProperty(wrapper, "length", { value: original.length });
  descriptor.value = wrapper;
  defineProperty(holder, name, descriptor);
}

const construct = Reflect.construct;
const ownKeys = Reflect.ownKeys;
const getPrototypeOf = Object.getPrototypeOf;
const setPrototypeOf = Object.setPrototypeOf;

/**
 * Replaces constructor `holder[name]` by one that hands its arguments through `adjust` first, and
 * otherwise looks and acts like it: the same own properties (name, length, `prototype`, statics,
 * copied as they are), the same [[Prototype]] (a typed array's `from` is inherited), the
 * prototype's `constructor` pointing at it, and subclasses keeping their `new.target`. Called
 * without `new`, it calls the original, which answers as it would (Intl's legacy constructors
 * work, the others throw their own TypeError). Returns the replacement, to wrap its statics.
 */
export function replaceConstructor(
  holder: object,
  name: string,
  adjust: (args: unknown[]) => unknown[],
): Record<string | symbol, unknown> {
  const original = (holder as Record<string, unknown>)[name] as new (...args: unknown[]) => object;
  const replacement = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return apply(original, this, adjust(args));
    // Made as the original's own (its prototype is the same object): V8's fast path. A subclass
    // keeps its new.target.
    return new.target === replacement
      ? construct(original, adjust(args))
      : construct(original, adjust(args), new.target);
  };
  setPrototypeOf(replacement, getPrototypeOf(original));
  for (const key of ownKeys(original))
    defineProperty(replacement, key, getOwnPropertyDescriptor(original, key) as PropertyDescriptor);
  const prototype = original.prototype as object;
  const constructorSlot = getOwnPropertyDescriptor(prototype, "constructor");
  // The value alone: the slots keep their attributes.
  if (constructorSlot) defineProperty(prototype, "constructor", { value: replacement });
  defineProperty(holder, name, { value: replacement });
  return replacement as unknown as Record<string | symbol, unknown>;
}

/**
 * A point where V8 can stop a loop of the bounds: a call enters a function, whose entry checks
 * for termination at once. A loop's own back edge checks only once its interrupt budget is spent,
 * thousands of iterations on, so a loop whose steps are long (comparing two 16 Mi-character
 * strings, converting one to a number) ran on for seconds past a stop (found by review).
 */
export function stopPoint(): void {}

/**
 * Whether `value` is what built-in `method` works on: the method (a getter such as
 * `ArrayBuffer.prototype.byteLength`) throws for anything else. A throw costs microseconds, so
 * cheaper checks go first where the answer is usually no.
 */
export function isReceiverOf(method: Method, value: unknown): boolean {
  try {
    apply(method, value, []);
    return true;
  } catch {
    return false;
  }
}
