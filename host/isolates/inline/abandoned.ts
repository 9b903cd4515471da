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

/** Attempts of one call before an abandoned run is reported as `unavailable`, or a refused one as refused. */
const MAX_ATTEMPTS = 3;

/**
 * Runs `attempt` (a whole handler call in its own transaction) again when the isolate abandoned it
 * inline, or when `refusedUnwritten` says its failure wrote nothing, for certain, and another
 * attempt may not meet it (a mutation's commit refused because its write lock's connection was
 * lost: the next attempt takes the lock anew and reads what landed meanwhile). Each attempt logs
 * into its own buffer, handed to `sink` only for the attempt that counts, so a handler's lines
 * appear once.
 */
export async function retryAbandoned<T, Line>(
  sink: (line: Line) => void,
  attempt: (log: (line: Line) => void) => Promise<T>,
  refusedUnwritten: (error: unknown) => boolean = () => false,
): Promise<T> {
  for (let attempts = 1; ; attempts++) {
    const lines: Line[] = [];
    try {
      const value = await attempt((line) => lines.push(line));
      for (const line of lines) sink(line);
      return value;
    } catch (error) {
      const abandoned = error instanceof InlineAbandoned;
      if ((abandoned || refusedUnwritten(error)) && attempts < MAX_ATTEMPTS) continue;
      if (abandoned)
        throw new PlatformError("unavailable", "The handler was interrupted several times; retry.");
      for (const line of lines) sink(line);
      throw error;
    }
  }
}
