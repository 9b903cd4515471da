import { useMemo, useState } from "react";
import { HandlerStats } from "./handler-stats.js";
import { useLogFollow } from "./log-follow.js";
import type { LogLine } from "./log-lines.js";

const LEVELS = ["info", "warn", "error"] as const;

/** What a line says beyond its message: a failed call's message, or a call's main figures. */
function Detail({ line }: { line: LogLine }) {
  const call = line.call;
  if (call?.error)
    return (
      <span className="error-text">
        <code>{call.outcome}</code>: {call.error.message}
      </span>
    );
  if (call)
    return (
      <span className="muted">
        {call.usage.rowsRead} read, {call.usage.writes} writes, {call.usage.wallMs.toFixed(1)} ms
      </span>
    );
  if (line.fields) return <code className="muted">{JSON.stringify(line.fields)}</code>;
  return null;
}

/** `/dashboard/deploys/<id>/logs`: the log, followed live and filtered, and per-handler figures. */
export function LogsPage({ deployment }: { deployment: string }) {
  const { lines, state, restart } = useLogFollow(deployment);
  const [level, setLevel] = useState<string>("");
  const [handler, setHandler] = useState<string>("");
  const handlers = useMemo(() => [...new Set(lines.map((l) => l.handler))].sort(), [lines]);
  const minimum = LEVELS.indexOf(level as (typeof LEVELS)[number]);
  const shown = lines
    .filter((l) => LEVELS.indexOf(l.level) >= minimum && (handler === "" || l.handler === handler))
    .slice(-200)
    .reverse();
  const calls = lines.filter((l) => l.call).length;
  return (
    <section>
      <h1>Logs of {deployment}</h1>
      <HandlerStats deployment={deployment} refresh={calls} />
      <h2>Log</h2>
      <div className="toolbar filters">
        <label>
          Level{" "}
          <select aria-label="Level" value={level} onChange={(e) => setLevel(e.target.value)}>
            <option value="">all</option>
            <option value="warn">warn and error</option>
            <option value="error">error</option>
          </select>
        </label>
        <label>
          Handler{" "}
          <select aria-label="Handler" value={handler} onChange={(e) => setHandler(e.target.value)}>
            <option value="">all</option>
            {handlers.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <span role="status" className={state === "following" ? "badge ok" : "badge warn"}>
          {state === "following" ? "Following" : state === "connecting" ? "Connecting" : "Stopped"}
        </span>
        {state === "stopped" && (
          <button type="button" onClick={restart}>
            Follow again
          </button>
        )}
      </div>
      {shown.length === 0 ? (
        <p className="muted">No lines{level || handler ? " match" : " yet"}.</p>
      ) : (
        <div className="scroll">
          <table className="grid log" aria-label={`Log of ${deployment}`}>
            <thead>
              <tr>
                <th scope="col">Time (UTC)</th>
                <th scope="col">Level</th>
                <th scope="col">Handler</th>
                <th scope="col">Message</th>
                <th scope="col">Detail</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((line) => (
                <tr key={line.seq} className={`level-${line.level}`}>
                  <td className="time">{line.time.slice(11, 23)}</td>
                  <td>{line.level}</td>
                  <td>
                    <code>{line.handler}</code>
                    {line.platform && (
                      <>
                        {" "}
                        <span className="badge" title="Written by the platform, not by the app's code">
                          platform
                        </span>
                      </>
                    )}
                  </td>
                  <td>{line.message}</td>
                  <td>
                    <Detail line={line} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p className="muted">Newest first; the last 200 matching lines of the {lines.length} kept.</p>
    </section>
  );
}
