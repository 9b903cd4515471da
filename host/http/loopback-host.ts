import { PlatformError } from "../../sdk/values/index.js";

/** Host names that can only reach this machine: `localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`. */
const LOOPBACK_NAME = /^(?:(?:[a-z0-9-]+\.)*localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])(?::\d{1,5})?$/;

/**
 * Loopback Host headers seen lately: a client sends the same one with every request. Only loopback
 * ones: in `platform dev` any other is refused anyway, and a hosted control plane's own name is
 * answered afresh, so a client sending many names fills nothing. Forgotten all at once past
 * {@link RECENT_HOSTS}; headers over {@link RECENT_HOST_CHARS} are never kept.
 */
const recentLoopbackHosts = new Set<string>();
const RECENT_HOSTS = 256;
const RECENT_HOST_CHARS = 300;

/**
 * Whether a `Host` header names this machine's loopback interface (with an optional port). `platform
 * dev` answers nothing else: a page on another site that re-points its own DNS name at 127.0.0.1
 * (DNS rebinding) sends its own name as Host, and is refused. Asked on every request in `platform
 * dev`; a loopback header seen lately is answered from memory (the check takes about 0.9 µs).
 */
export function isLoopbackHost(hostHeader: string): boolean {
  if (recentLoopbackHosts.has(hostHeader)) return true;
  if (!namesLoopback(hostHeader)) return false;
  if (hostHeader.length <= RECENT_HOST_CHARS) {
    if (recentLoopbackHosts.size >= RECENT_HOSTS) recentLoopbackHosts.clear();
    recentLoopbackHosts.add(hostHeader);
  }
  return true;
}

function namesLoopback(hostHeader: string): boolean {
  const host = hostHeader.toLowerCase();
  if (!LOOPBACK_NAME.test(host)) return false;
  if (!host.startsWith("127.")) return true;
  return host
    .replace(/:\d+$/, "")
    .split(".")
    .every((octet) => Number(octet) <= 255);
}

/** Whether a peer address is this machine's loopback (`127.0.0.0/8`, `::1`, or IPv4 mapped into IPv6). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith("::ffff:") ? address.slice(7) : address;
  return address === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/**
 * Whether an `Origin` header names a page of this machine (http or https at a loopback host name).
 * `platform dev` answers nothing else: any site the developer visits may otherwise open
 * `ws://localhost:3000/api/sync`, or post to it, and a browser sends such a page's own origin.
 */
export function isLoopbackOrigin(origin: string): boolean {
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  return (url.protocol === "http:" || url.protocol === "https:") && isLoopbackHost(url.host);
}

/**
 * Whether a request without an `Origin` was made by a page of another site, as its browser says
 * (`Sec-Fetch-Site: cross-site`) unless its `Referer` names a page of this machine (a page of
 * `127.0.0.1` is another site to `localhost`). An `<img src="http://localhost:3000/__platform/
 * logs?follow=1">` sends no `Origin`: repeated, such a page took every log stream of `platform
 * dev`, or made it build whole exports, though it could read no answer (an attack review).
 */
export function fetchedByAnotherSite(secFetchSite: string | undefined, referer: string | undefined): boolean {
  if (secFetchSite !== "cross-site") return false;
  return referer === undefined || !URL.canParse(referer) || !isLoopbackOrigin(new URL(referer).origin);
}

/** In `platform dev`, the error for a request that came from a page of another site, or null when it did not. */
export function crossSiteInDev(origin: string | undefined): PlatformError | null {
  if (origin === undefined || origin === "" || isLoopbackOrigin(origin)) return null;
  return new PlatformError(
    "forbidden",
    `platform dev answers only pages served from this machine, and this request comes from a page of ${JSON.stringify(origin)}. Serve your page from localhost, or call the app from a script (which sends no Origin).`,
  );
}
