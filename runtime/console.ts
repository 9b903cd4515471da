/**
 * `console` in a capsule writes to the deployment's log, as `ctx.log` does: `log`, `info` and
 * `debug` at `info`, `warn` and `error` at their own levels. V8's own `console` in an isolate
 * writes nowhere, so a developer's first `console.log` vanished without a word.
 */
import { type LogLevel, writeLog } from "./context.js";
import { currentExecution } from "./determinism.js";

/** One argument as `console.log` in Node shows it, near enough: text as it is, values as JSON. */
function shown(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (typeof value === "bigint") return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Writes `args` as one line at `level` for the running execution; nothing outside one (the capsule's top level). */
function write(level: LogLevel, args: unknown[]): void {
  const execution = currentExecution();
  if (execution.requestId === 0) return;
  writeLog(execution, level, args.map(shown).join(" "));
}

/** Replaces the global `console` by one writing to the deployment's log (frozen: a capsule cannot redirect it). */
export function installConsole(): void {
  const methods: Record<string, LogLevel> = {
    log: "info",
    info: "info",
    debug: "info",
    warn: "warn",
    error: "error",
  };
  const console: Record<string, (...args: unknown[]) => void> = {};
  for (const [name, level] of Object.entries(methods)) console[name] = (...args) => write(level, args);
  Object.defineProperty(globalThis, "console", {
    value: Object.freeze(console),
    writable: false,
    configurable: false,
  });
}
