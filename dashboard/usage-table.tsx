import type { RunAnswer } from "../sdk/protocol/dashboard-functions.js";
import { formatSize } from "./format.js";

type Usage = NonNullable<RunAnswer["usage"]>;

/** The figures of a call in the order the logs show them, with how each is written. */
const FIGURES: Array<{ key: keyof Usage; label: string; show: (n: number) => string }> = [
  { key: "rowsReturned", label: "Rows returned", show: (n) => n.toLocaleString("en") },
  { key: "rowsRead", label: "Rows read", show: (n) => n.toLocaleString("en") },
  { key: "bytesRead", label: "Bytes read", show: formatSize },
  { key: "rangesRead", label: "Gets and scans", show: (n) => n.toLocaleString("en") },
  { key: "indexScans", label: "Index scans", show: (n) => n.toLocaleString("en") },
  { key: "writes", label: "Writes", show: (n) => n.toLocaleString("en") },
  { key: "cpuMs", label: "CPU time", show: (n) => `${n.toFixed(1)} ms` },
  { key: "wallMs", label: "Wall time", show: (n) => `${n.toFixed(1)} ms` },
];

/** A share of a limit as a percentage people read (`0.4%`, `12%`). */
export function formatShare(share: number): string {
  const percent = share * 100;
  return percent < 10 ? `${percent.toFixed(1)}%` : `${Math.round(percent)}%`;
}

/** A share of a limit as a small bar (SVG: the page's CSP allows no inline styles). */
export function ShareBar({ share }: { share: number }) {
  const width = 60;
  return (
    <svg className="share-bar" width={width} height={8} aria-hidden="true">
      <rect className="track" width={width} height={8} rx={2} />
      <rect
        className={share > 0.5 ? "fill warn" : "fill"}
        width={Math.max(share > 0 ? 1 : 0, Math.min(1, share) * width)}
        height={8}
        rx={2}
      />
    </svg>
  );
}

/** A call's usage: each figure, its limit where it has one, and the share of that limit it used. */
export function UsageTable({ usage, limits }: { usage: Usage; limits: RunAnswer["limits"] }) {
  return (
    <table className="grid usage" aria-label="Usage">
      <thead>
        <tr>
          <th scope="col">Figure</th>
          <th scope="col" className="num">
            Used
          </th>
          <th scope="col" className="num">
            Limit
          </th>
          <th scope="col">Share of the limit</th>
        </tr>
      </thead>
      <tbody>
        {FIGURES.map(({ key, label, show }) => {
          const limit = (limits as Partial<Record<keyof Usage, number>>)[key];
          const share = limit === undefined ? undefined : usage[key] / limit;
          return (
            <tr key={key}>
              <th scope="row">{label}</th>
              <td className="num">{show(usage[key])}</td>
              <td className="num">{limit === undefined ? "no limit" : show(limit)}</td>
              <td>
                {share === undefined ? (
                  <span className="muted">-</span>
                ) : (
                  <span className="share">
                    <ShareBar share={share} /> {formatShare(share)}
                  </span>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
