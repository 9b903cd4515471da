import { PassThrough } from "node:stream";
import type { Context } from "koa";
import { isPlatformError } from "../../sdk/values/index.js";

/**
 * Answers `ctx` with `status` as NDJSON while `run` works: `run` writes its own lines (progress)
 * through the function it is given, then the outcome follows as one line, `answer(value)` or
 * `{ error }` (the platform error's code and message; anything else is `internal`), and the
 * stream ends. The returned promise never rejects. `flush`: the headers go out at once (a route
 * that awaits the whole run, so the client sees its progress before the end).
 */
export function streamOutcome<T>(
  ctx: Context,
  status: number,
  run: (line: (value: unknown) => void) => Promise<T>,
  answer: (value: T) => unknown,
  flush = false,
): Promise<void> {
  const stream = new PassThrough();
  const line = (value: unknown) => stream.write(`${JSON.stringify(value)}\n`);
  ctx.status = status;
  ctx.type = "application/x-ndjson";
  ctx.body = stream;
  if (flush) ctx.res.flushHeaders();
  return run(line)
    .then(
      (value) => line(answer(value)),
      (error: unknown) =>
        line({
          error: isPlatformError(error) ? error.toJSON() : { code: "internal", message: "Internal error." },
        }),
    )
    .then(
      () => undefined,
      () => undefined,
    )
    .finally(() => stream.end());
}
