import { useCallback, useEffect, useState } from "react";
import type { CallUsage } from "../sdk/protocol/usage.js";
import { csrf, deployPath } from "./api.js";

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
const KEPT = 1000;

export type FollowState = "connecting" | "following" | "stopped";

/**
 * The deployment's log, followed: the kept lines, then each new one as the host writes it, read
 * from the NDJSON stream of `GET /v1/deploys/<id>/logs?follow=1` (a `fetch` stream: it can carry
 * the session's CSRF header, which an `EventSource` cannot). Stops when the page goes away.
 */
export function useLogFollow(deployment: string): {
  lines: LogLine[];
  state: FollowState;
  restart: () => void;
} {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [state, setState] = useState<FollowState>("connecting");
  const [round, setRound] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `round` restarts the stream
  useEffect(() => {
    const abort = new AbortController();
    let kept: LogLine[] = [];
    let seq = 0;
    setLines([]);
    setState("connecting");
    (async () => {
      const response = await fetch(deployPath(deployment, "/logs?follow=1"), {
        headers: { "x-platform-csrf": csrf() },
        credentials: "same-origin",
        signal: abort.signal,
      });
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      setState("following");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let pending = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += value;
        const parts = pending.split("\n");
        pending = parts.pop() ?? "";
        const fresh = parts
          .filter((part) => part !== "")
          .map((part) => Object.assign(JSON.parse(part) as LogLine, { seq: ++seq }));
        if (fresh.length === 0) continue;
        kept = kept.concat(fresh).slice(-KEPT);
        setLines(kept);
      }
    })().then(
      () => !abort.signal.aborted && setState("stopped"),
      () => !abort.signal.aborted && setState("stopped"),
    );
    return () => abort.abort();
  }, [deployment, round]);
  const restart = useCallback(() => setRound((n) => n + 1), []);
  return { lines, state, restart };
}
