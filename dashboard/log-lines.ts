/**
 * Reading the NDJSON log stream of `GET /v1/deploys/<id>/logs?follow=1`, apart from React so that
 * it can be tested plainly.
 */
import type { CallUsage } from "../sdk/protocol/usage.js";

/** One log line as `GET /v1/deploys/<id>/logs` streams it (the fields the page reads). */
export interface LogLine {
  /** Its place in this page's stream (a key for lists). */
  seq: number;
  time: string;
  level: "info" | "warn" | "error";
  handler: string;
  requestId: string;
  message: string;
  fields?: Record<string, unknown>;
  call?: { kind: string; name: string; outcome: string; usage: CallUsage; error?: { message: string } };
  /** The platform's own record of a dashboard action (no handler's line has it). */
  platform?: true;
}

/** Lines the page keeps (the host keeps as many per deployment). */
export const KEPT = 1000;

/**
 * Reads `body` to its end, calling `onLines` with the newest {@link KEPT} lines after each chunk
 * that completes a line. Once `signal` is aborted it returns without calling `onLines` again: a
 * chunk read just before the abort (the page moved to another deployment) must not show the old
 * deployment's lines under the new one.
 */
export async function readLogLines(
  body: ReadableStream<Uint8Array<ArrayBuffer>>,
  signal: AbortSignal,
  onLines: (lines: LogLine[]) => void,
): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let kept: LogLine[] = [];
  let seq = 0;
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (signal.aborted) {
      await reader.cancel().catch(() => undefined);
      return;
    }
    if (done) return;
    pending += value;
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    const fresh = parts
      .filter((part) => part !== "")
      .map((part) => Object.assign(JSON.parse(part) as LogLine, { seq: ++seq }));
    if (fresh.length === 0) continue;
    kept = kept.concat(fresh).slice(-KEPT);
    onLines(kept);
  }
}
