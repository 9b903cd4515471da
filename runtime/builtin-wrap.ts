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
