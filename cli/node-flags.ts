import { spawn } from "node:child_process";

/**
 * Node flags the platform needs: isolated-vm cannot start isolates from Node 20's startup snapshot;
 * V8 would otherwise run every isolate's garbage collection helpers on one pool of threads at the
 * host's priority, shared with the host's own heap, so a tenant allocating in a loop would slow
 * the host down (with it, an isolate collects on its own thread, at its priority: docs/security.md
 * "Scheduling"); and V8's allocation-site pretenuring would take some of a call's short-lived
 * objects for long-lived ones under load and allocate them in the old generation, where, as
 * garbage, they keep what they point at alive through young collections (about 2 KB and 9 µs of
 * host CPU per request: bench/HISTORY.md, "the host's own garbage").
 */
export const REQUIRED_NODE_FLAGS = [
  "--no-node-snapshot",
  "--single-threaded-gc",
  "--no-allocation-site-pretenuring",
] as const;

/**
 * Re-runs this process with {@link REQUIRED_NODE_FLAGS} when they are missing, forwarding
 * arguments, stdio, signals and the exit code. Returns true when the caller should stop (the child
 * now does the work). Users never have to pass the flags themselves.
 */
export function ensureNodeFlags(script: string): boolean {
  const missing = REQUIRED_NODE_FLAGS.filter((flag) => !process.execArgv.includes(flag));
  if (missing.length === 0) return false;
  const child = spawn(process.execPath, [...missing, ...process.execArgv, script, ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
  return true;
}
