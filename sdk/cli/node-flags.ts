import { spawn } from "node:child_process";

/** Node flags the platform needs: isolated-vm cannot start isolates from Node 20's startup snapshot. */
export const REQUIRED_NODE_FLAGS = ["--no-node-snapshot"] as const;

/**
 * Host tuning the CLI adds unless the user already sets that option (on the command line or in
 * `NODE_OPTIONS`), as `name=value`.
 *
 * `--max-semi-space-size=64` (MiB; V8's own ceiling is 16): while a request is in flight, its
 * objects survive every scavenge that comes, so the host's young-generation GC costs grow with the
 * number of scavenges. A semi-space four times as large scavenges about a quarter as often. In
 * interleaved runs of bench/isolates' load it took about 8% off the host's CPU per request. The
 * semi-space starts at 1 MiB and grows only under allocation pressure, so an idle host pays
 * nothing; a busy one holds up to about 192 MiB of young generation. Capsule isolates are not
 * affected: isolated-vm sizes their young generation from each isolate's heap limit.
 */
export const TUNING_NODE_FLAGS = ["--max-semi-space-size=64"] as const;

/** The option a flag sets, spelled with dashes (Node accepts `_` too): `--max-semi-space-size`. */
function optionName(flag: string): string {
  return (flag.split("=")[0] as string).replaceAll("_", "-");
}

/** The flags of {@link REQUIRED_NODE_FLAGS} and {@link TUNING_NODE_FLAGS} this process lacks. */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions = ""): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/).filter(Boolean)].map(optionName));
  return [...REQUIRED_NODE_FLAGS, ...TUNING_NODE_FLAGS].filter((flag) => !given.has(optionName(flag)));
}

/**
 * Re-runs this process with {@link REQUIRED_NODE_FLAGS} and {@link TUNING_NODE_FLAGS} when they
 * are missing, forwarding arguments, stdio, signals and the exit code. Returns true when the caller
 * should stop (the child now does the work). Users never have to pass the flags themselves.
 */
export function ensureNodeFlags(script: string): boolean {
  const missing = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS);
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
