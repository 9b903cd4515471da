/**
 * Hardening applied before any capsule code runs: code generation from strings is disabled by
 * replacing `eval` and every function constructor reachable through prototypes. (isolated-vm gives
 * no per-isolate V8 flag for this, and the process-wide flag would break the host's own libraries.)
 */
function refuse(): never {
  throw new EvalError("Code generation from strings is disabled in capsules.");
}

/** Disables `eval`, `Function(...)` and the async/generator function constructors. */
export function lockDownCodeGeneration(): void {
  const prototypes = [
    Object.getPrototypeOf(() => {}),
    Object.getPrototypeOf(async () => {}),
    Object.getPrototypeOf(function* () {}),
    Object.getPrototypeOf(async function* () {}),
  ];
  for (const prototype of prototypes) {
    Object.defineProperty(prototype, "constructor", { value: refuse, writable: false, configurable: false });
  }
  const global = globalThis as Record<string, unknown>;
  Object.defineProperty(global, "eval", { value: refuse, writable: false, configurable: false });
  Object.defineProperty(global, "Function", { value: refuse, writable: false, configurable: false });
}
