import { isPlatformError } from "../sdk/values/index.js";

/** Exit codes of every command: 0 success, 1 failure, 2 usage. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Prints an error for humans on stderr (no stack trace unless `verbose`) and returns exit code 1. */
export function reportError(error: unknown, verbose = false): number {
  const message = isPlatformError(error)
    ? error.message
    : error instanceof Error
      ? error.message
      : String(error);
  process.stderr.write(`error: ${message}\n`);
  if (verbose && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  return EXIT.failure;
}

/** A byte count for humans: B, KiB or MiB. */
export function formatBytes(bytes: number): string {
  return bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
