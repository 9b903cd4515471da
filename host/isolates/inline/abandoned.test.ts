import { describe, expect, it } from "vitest";
import { LOCK_LOST, lockLostError, refusedForLostLock } from "../../db/kv/index.js";
import { InlineAbandoned, retryAbandoned } from "./abandoned.js";

/** An attempt that fails with `failures` in turn, then answers its attempt's number; logs one line each time. */
function attempts(failures: Array<() => Error>) {
  let made = 0;
  return async (log: (line: string) => void) => {
    made++;
    log(`attempt ${made}`);
    const failure = failures[made - 1];
    if (failure) throw failure();
    return made;
  };
}

describe("retryAbandoned", () => {
  it("runs a write refused for a lost lock again, and sinks the lines of the attempt that counts only", async () => {
    const lines: string[] = [];
    const answer = await retryAbandoned(
      (line: string) => lines.push(line),
      attempts([lockLostError]),
      refusedForLostLock,
    );
    expect(answer).toBe(2);
    expect(lines).toEqual(["attempt 2"]);
  });

  it("answers the refusal of the third attempt as it is, with that attempt's lines", async () => {
    const lines: string[] = [];
    const refused = retryAbandoned(
      (line: string) => lines.push(line),
      attempts([lockLostError, lockLostError, lockLostError]),
      refusedForLostLock,
    );
    await expect(refused).rejects.toMatchObject({ code: "unavailable", cause: LOCK_LOST });
    expect(lines).toEqual(["attempt 3"]);
  });

  it("counts abandoned and refused attempts together", async () => {
    const abandoned = () => new InlineAbandoned();
    const refused = retryAbandoned(
      () => {},
      attempts([abandoned, lockLostError, abandoned]),
      refusedForLostLock,
    );
    await expect(refused).rejects.toMatchObject({
      code: "unavailable",
      message: expect.stringContaining("interrupted"),
    });
    const answered = retryAbandoned(() => {}, attempts([abandoned, lockLostError]), refusedForLostLock);
    await expect(answered).resolves.toBe(3);
  });

  it("never runs again a failure that may have written, nor a refusal unless told to", async () => {
    const failed = retryAbandoned(() => {}, attempts([() => new Error("handler threw")]), refusedForLostLock);
    await expect(failed).rejects.toThrow("handler threw");
    await expect(retryAbandoned(() => {}, attempts([lockLostError]))).rejects.toMatchObject({
      cause: LOCK_LOST,
    });
  });
});
