import { useCallback, useEffect, useState } from "react";
import { csrf, deployPath } from "./api.js";
import { type LogLine, readLogLines } from "./log-lines.js";

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
    setLines([]);
    setState("connecting");
    (async () => {
      const response = await fetch(deployPath(deployment, "/logs?follow=1"), {
        headers: { "x-platform-csrf": csrf() },
        credentials: "same-origin",
        signal: abort.signal,
      });
      if (abort.signal.aborted) return;
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      setState("following");
      await readLogLines(response.body, abort.signal, setLines);
    })().then(
      () => !abort.signal.aborted && setState("stopped"),
      () => !abort.signal.aborted && setState("stopped"),
    );
    return () => abort.abort();
  }, [deployment, round]);
  const restart = useCallback(() => setRound((n) => n + 1), []);
  return { lines, state, restart };
}
