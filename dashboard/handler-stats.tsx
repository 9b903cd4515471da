import { useEffect } from "react";
import type { StatsAnswer } from "../sdk/protocol/dashboard-functions.js";
import { api, deployPath } from "./api.js";
import { LatencyLines, MinuteBars } from "./charts.js";
import { useLoad } from "./load.js";
import { formatShare, ShareBar } from "./usage-table.js";

/** How often the figures are read again while the page is open. */
const REFRESH_MS = 10_000;

function ms(value: number): string {
  return value >= 100 ? `${Math.round(value)} ms` : `${value.toFixed(1)} ms`;
}

/**
 * Per-handler figures over the last hour (calls, failures, p50/p99 wall time, the largest share
 * of any budget one call used), each with a small chart a bar or point a minute. `refresh` changes
 * when the page wants them read again (a new log line of a call).
 */
export function HandlerStats({ deployment, refresh }: { deployment: string; refresh: number }) {
  const loaded = useLoad(
    () => api<StatsAnswer>(deployPath(deployment, "/stats")),
    `${deployment}/${refresh}`,
  );
  const { reload } = loaded;
  useEffect(() => {
    const timer = setInterval(reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);
  // Figures read again on each new call stay in view meanwhile.
  const stats = loaded.latest;
  return (
    <section aria-labelledby="stats-title">
      <h2 id="stats-title">Last hour, per handler</h2>
      {loaded.error && (
        <p className="error" role="alert">
          {loaded.error}
        </p>
      )}
      {stats && stats.handlers.length === 0 && <p className="muted">No calls in the last hour.</p>}
      {stats && stats.handlers.length > 0 && (
        <div className="scroll">
          <table className="grid stats" aria-label="Handler figures">
            <thead>
              <tr>
                <th scope="col">Handler</th>
                <th scope="col">Calls</th>
                <th scope="col">Failures</th>
                <th scope="col">Wall time p50 / p99</th>
                <th scope="col">Largest budget share</th>
              </tr>
            </thead>
            <tbody>
              {stats.handlers.map((h) => (
                <tr key={h.handler} data-handler={h.handler}>
                  <th scope="row">
                    <code>{h.handler}</code> <span className="muted">{h.kind}</span>
                  </th>
                  <td>
                    <span className="figure">{h.calls.toLocaleString("en")}</span>
                    <MinuteBars
                      minutes={h.minutes}
                      since={stats.since}
                      value={(m) => m.calls}
                      label={`Calls of ${h.handler} per minute`}
                    />
                  </td>
                  <td>
                    <span className="figure">{h.failures.toLocaleString("en")}</span>
                    <MinuteBars
                      minutes={h.minutes}
                      since={stats.since}
                      value={(m) => m.failures}
                      label={`Failures of ${h.handler} per minute`}
                      tone="bad"
                    />
                  </td>
                  <td>
                    <span className="figure">
                      {ms(h.p50Ms)} / {ms(h.p99Ms)}
                    </span>
                    <LatencyLines
                      minutes={h.minutes}
                      since={stats.since}
                      label={`p50 and p99 wall time of ${h.handler} per minute`}
                    />
                  </td>
                  <td>
                    <span className="figure">
                      <ShareBar share={h.maxShare} /> {formatShare(h.maxShare)}
                    </span>
                    <MinuteBars
                      minutes={h.minutes}
                      since={stats.since}
                      value={(m) => m.maxShare}
                      label={`Largest budget share of ${h.handler} per minute`}
                      tone="share"
                      scale={1}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p className="muted">
        Counted by the host process that answered, over calls it ran; p50/p99 are within about 12%.
      </p>
    </section>
  );
}
