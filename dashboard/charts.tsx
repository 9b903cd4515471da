import type { MinuteFigures } from "../sdk/protocol/dashboard-functions.js";

const MINUTE_MS = 60_000;
const WIDTH = 120;
const HEIGHT = 24;

/** Each of the last 60 minutes' `value` (0 where a minute had no call), oldest first. */
function perMinute(minutes: MinuteFigures[], since: number, value: (m: MinuteFigures) => number): number[] {
  const values = new Array<number>(60).fill(0);
  for (const minute of minutes) {
    const slot = Math.round((minute.minute - since) / MINUTE_MS);
    if (slot >= 0 && slot < 60) values[slot] = value(minute);
  }
  return values;
}

/**
 * A small bar chart of one figure over the last hour, a bar a minute (SVG drawn here: no chart
 * library, and attributes only, as the page's CSP allows no inline styles). `label` is read out.
 */
export function MinuteBars({
  minutes,
  since,
  value,
  label,
  tone = "",
  scale,
}: {
  minutes: MinuteFigures[];
  since: number;
  value: (m: MinuteFigures) => number;
  label: string;
  tone?: string;
  /** The value of a full-height bar (default: the largest value shown). */
  scale?: number;
}) {
  const values = perMinute(minutes, since, value);
  const top = Math.max(scale ?? 0, ...values) || 1;
  const step = WIDTH / values.length;
  return (
    <svg className={`chart ${tone}`} width={WIDTH} height={HEIGHT} role="img" aria-label={label}>
      <title>{label}</title>
      <line className="axis" x1={0} y1={HEIGHT - 0.5} x2={WIDTH} y2={HEIGHT - 0.5} />
      {values.map((v, i) =>
        v > 0 ? (
          <rect
            // biome-ignore lint/suspicious/noArrayIndexKey: a minute's slot is its identity
            key={i}
            x={i * step}
            y={HEIGHT - Math.max(1, (v / top) * HEIGHT)}
            width={Math.max(1, step - 0.5)}
            height={Math.max(1, (v / top) * HEIGHT)}
          />
        ) : null,
      )}
    </svg>
  );
}

/** p50 and p99 wall time per minute as two small lines (minutes without calls are skipped). */
export function LatencyLines({
  minutes,
  since,
  label,
}: {
  minutes: MinuteFigures[];
  since: number;
  label: string;
}) {
  const top = Math.max(...minutes.map((m) => m.p99Ms), 0.001);
  const xy = (m: MinuteFigures, ms: number): [number, number] => [
    (((m.minute - since) / MINUTE_MS + 0.5) * WIDTH) / 60,
    HEIGHT - 1 - (ms / top) * (HEIGHT - 2),
  ];
  const line = (pick: (m: MinuteFigures) => number) => minutes.map((m) => xy(m, pick(m)).join(",")).join(" ");
  return (
    <svg className="chart lines" width={WIDTH} height={HEIGHT} role="img" aria-label={label}>
      <title>{label}</title>
      <line className="axis" x1={0} y1={HEIGHT - 0.5} x2={WIDTH} y2={HEIGHT - 0.5} />
      <polyline className="p99" points={line((m) => m.p99Ms)} />
      <polyline className="p50" points={line((m) => m.p50Ms)} />
      {minutes.map((m) => {
        const [x, y] = xy(m, m.p99Ms);
        return <circle key={m.minute} className="p99" r={1.5} cx={x} cy={y} />;
      })}
    </svg>
  );
}
