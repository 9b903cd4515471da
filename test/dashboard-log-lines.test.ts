/**
 * Reading the followed log stream (dashboard/log-lines.ts): lines split across chunks, the newest
 * kept, and nothing shown once the page has aborted the stream: a chunk read just before the abort
 * (the page moved to another deployment) would show the old deployment's lines under the new one.
 */
import { describe, expect, it } from "vitest";
import { KEPT, type LogLine, readLogLines } from "../dashboard/log-lines.js";

const encoder = new TextEncoder();

function line(n: number): string {
  return `${JSON.stringify({ time: "t", level: "info", handler: "h", requestId: `r${n}`, message: `m${n}` })}\n`;
}

/** A stream of `chunks`, then its end. */
function streamOf(chunks: string[]): ReadableStream<Uint8Array<ArrayBuffer>> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

describe("readLogLines", () => {
  it("shows each complete line, numbered, across chunk boundaries", async () => {
    const shown: LogLine[][] = [];
    const [first, second] = [line(1), line(2)];
    await readLogLines(
      streamOf([first.slice(0, 10), first.slice(10) + second.slice(0, 5), second.slice(5)]),
      new AbortController().signal,
      (lines) => shown.push(lines),
    );
    expect(shown.map((lines) => lines.map((l) => [l.seq, l.message]))).toEqual([
      [[1, "m1"]],
      [
        [1, "m1"],
        [2, "m2"],
      ],
    ]);
  });

  it("keeps the newest lines only", async () => {
    let last: LogLine[] = [];
    const all = Array.from({ length: KEPT + 5 }, (_, n) => line(n)).join("");
    await readLogLines(streamOf([all]), new AbortController().signal, (lines) => {
      last = lines;
    });
    expect(last).toHaveLength(KEPT);
    expect(last[0]?.message).toBe("m5");
  });

  it("shows nothing of a chunk read after the stream was aborted", async () => {
    const abort = new AbortController();
    const shown: LogLine[][] = [];
    // The chunk is there to read; the abort comes before the loop sees the read's answer.
    const reading = readLogLines(streamOf([line(1)]), abort.signal, (lines) => shown.push(lines));
    abort.abort();
    await reading;
    expect(shown).toEqual([]);
  });
});
