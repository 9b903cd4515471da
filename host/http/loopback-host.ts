/** Host names that can only reach this machine: `localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`. */
const LOOPBACK_NAME = /^(?:(?:[a-z0-9-]+\.)*localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])(?::\d{1,5})?$/;

/**
 * Whether a `Host` header names this machine's loopback interface (with an optional port). `platform
 * dev` answers nothing else: a page on another site that re-points its own DNS name at 127.0.0.1
 * (DNS rebinding) sends its own name as Host, and is refused.
 */
export function isLoopbackHost(hostHeader: string): boolean {
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
