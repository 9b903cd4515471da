/** How the dashboard writes numbers, sizes, times and counts. */
import type { RowCount } from "../sdk/protocol/dashboard.js";

/** A byte count as people read it (`15 B`, `1.5 KiB`, `2.0 MiB`). */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** How long ago `ms` (epoch) was, coarsely. */
export function formatAge(ms: number, now = Date.now()): string {
  const minutes = Math.floor((now - ms) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ago` : `${Math.floor(hours / 24)} days ago`;
}

/** An epoch-ms time as a local date and time to the second. */
export function formatTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toLocaleString(undefined, { hour12: false });
}

/** A count: exact, or "more than N". */
export function formatCount(count: RowCount | undefined): string {
  if (!count) return "…";
  return "exact" in count
    ? count.exact.toLocaleString("en")
    : `more than ${count.atLeast.toLocaleString("en")}`;
}

/** `n thing` / `n things`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many}`;
}
