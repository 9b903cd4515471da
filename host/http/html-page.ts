/**
 * The host's own HTML pages (the dashboard, the landing pages): one layout, and the one escape
 * every value put into them goes through.
 */

/** Escapes text for HTML. */
export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );
}

/** A whole page titled `title` around `body` (HTML the caller escaped). */
export function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:64rem;padding:0 1rem;color:#1d2330}
h1{font-size:1.4rem} table{border-collapse:collapse;width:100%} th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid #e3e6ec}
th{font-weight:600;background:#f5f6f8} td.num{text-align:right;font-variant-numeric:tabular-nums} code{font-size:.9em}
button{cursor:pointer;border:1px solid #c4c9d4;background:#fff;border-radius:4px;padding:.25rem .6rem} button.danger{color:#b3261e;border-color:#e2a9a5}
.muted{color:#6b7280} .notice{background:#fff7e6;border:1px solid #f0d9a8;padding:.6rem .8rem;border-radius:4px}
input{padding:.4rem;width:28rem;max-width:100%}
</style></head><body>${body}</body></html>`;
}
