import type { DeploymentRecord } from "../deployments/index.js";
import type { ObjectService } from "../storage/index.js";
import { escapeHtml, page } from "./html-page.js";

/** A byte count as people read it (`15 B`, `1.5 KiB`, `2.0 MiB`). */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** How long ago something happened, coarsely (`just now`, `5 min ago`, `3 h ago`, `4 days ago`). */
export function formatAge(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ago` : `${Math.floor(hours / 24)} days ago`;
}

/**
 * The dashboard's header on a server-rendered page: the same places as the app's own header
 * (deployments, the deployment's data and storage) and a sign-out form with the session's CSRF token.
 */
function dashboardNav(deployment: string, signedInAs: string, csrf: string): string {
  const id = encodeURIComponent(deployment);
  return `<nav aria-label="Main" style="display:flex;flex-wrap:wrap;gap:.4rem .9rem;align-items:center;padding:.6rem 0;border-bottom:1px solid #e3e6ec;margin-bottom:1rem">
<a href="/dashboard" style="font-weight:700;color:#1d2330;text-decoration:none">platform</a><a href="/dashboard">Deployments</a><span>/</span><code>${escapeHtml(deployment)}</code>
<a href="/dashboard/deploys/${id}/data">Data</a><a href="/deploys/${id}/storage" aria-current="page" style="font-weight:600;color:#1d2330">Storage</a>
<form method="post" action="/dashboard/logout" style="margin-left:auto"><span>${escapeHtml(signedInAs)}</span> <input type="hidden" name="csrf" value="${csrf}"><button type="submit">Sign out</button></form></nav>`;
}

/** The storage page of deployment `record`: the newest files, each with a CSRF-token delete form. */
export function storagePage(
  record: DeploymentRecord,
  listing: Awaited<ReturnType<ObjectService["list"]>>,
  signedInAs: string,
  csrf: string,
): string {
  const now = Date.now();
  const rows = listing.objects
    .map(
      (
        o,
      ) => `<tr><td><code>${escapeHtml(o.key)}</code></td><td>${o.visibility}</td><td class="num">${formatSize(o.size)}</td><td>${escapeHtml(o.contentType)}</td>
<td>${escapeHtml(o.uploaderEmail ?? o.uploaderId)}</td><td>${formatAge(now - o.uploadedAt)}</td>
<td><form method="post" action="/deploys/${escapeHtml(record.id)}/storage/delete"><input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="key" value="${escapeHtml(o.key)}"><button class="danger" type="submit" aria-label="Delete ${escapeHtml(o.key)}">Delete</button></form></td></tr>`,
    )
    .join("\n");
  const window = listing.truncated
    ? `<p class="muted">Showing the newest ${listing.objects.length} of ${listing.totals.count} files.</p>`
    : "";
  return page(
    `Storage of ${record.id}`,
    `${dashboardNav(record.id, signedInAs, csrf)}<h1>Storage of <code>${escapeHtml(record.id)}</code></h1>
<p class="muted">${listing.totals.count} ${listing.totals.count === 1 ? "file" : "files"}, ${formatSize(listing.totals.bytes)}. Signed in as ${escapeHtml(signedInAs)}. <a href="/dashboard">All deployments</a></p>${window}
${rows ? `<table><thead><tr><th>Key</th><th>Visibility</th><th>Size</th><th>Type</th><th>Uploader</th><th>Age</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : `<p class="notice">No files yet.</p>`}`,
  );
}
