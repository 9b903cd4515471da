import { PlatformError } from "../../../sdk/values/index.js";

/**
 * Thrown for an inline execution the isolate abandoned (its deployment was demoted). The caller
 * runs the whole handler again, in a fresh transaction; it will run on the isolate's thread.
 */
export class InlineAbandoned extends Error {
  constructor() {
    super("The handler was moved off the host's main thread; run it again.");
    this.name = "InlineAbandoned";
  }
}

/** Attempts of one call before an abandoned run is reported as `unavailable`. */
const MAX_ATTEMPTS = 3;

/**
 * Runs `attempt` (a whole handler call in its own transaction) again when the isolate abandoned it
 * inline. Each attempt logs into its own buffer, handed to `sink` only for the attempt that counts,
 * so a handler's lines appear once.
 */
export async function retryAbandoned<T, Line>(
  sink: (line: Line) => void,
  attempt: (log: (line: Line) => void) => Promise<T>,
): Promise<T> {
  for (let attempts = 1; ; attempts++) {
    const lines: Line[] = [];
    try {
      const value = await attempt((line) => lines.push(line));
      for (const line of lines) sink(line);
      return value;
    } catch (error) {
      if (error instanceof InlineAbandoned) {
        if (attempts < MAX_ATTEMPTS) continue;
        throw new PlatformError("unavailable", "The handler was interrupted several times; retry.");
      }
      for (const line of lines) sink(line);
      throw error;
    }
  }
}
