import type { IncomingMessage } from "node:http";
import { isIP, isIPv6 } from "node:net";
import type { Duplex } from "node:stream";
import ipaddr from "ipaddr.js";

/** Keys of recent IPv6 addresses (ipaddr.js takes about 7 µs per address, on every request). */
const recentKeys = new Map<string, string | null>();
/** Addresses kept in {@link recentKeys}; past it the cache starts again. */
const RECENT_KEYS = 10_000;

/** {@link clientAddressKey} of an address holding a colon, or null when it is not an address. */
function ipv6Key(address: string): string | null {
  let key = recentKeys.get(address);
  if (key !== undefined) return key;
  if (!isIPv6(address)) key = null;
  else {
    const parsed = ipaddr.process(address);
    key =
      parsed.kind() === "ipv4"
        ? parsed.toString()
        : `${(parsed as ipaddr.IPv6).parts
            .slice(0, 4)
            .map((part) => part.toString(16))
            .join(":")}::/64`;
  }
  if (recentKeys.size >= RECENT_KEYS) recentKeys.clear();
  recentKeys.set(address, key);
  return key;
}

/**
 * The key a client's address is limited by: an IPv4 address as it is (an IPv4-mapped IPv6 one
 * too), an IPv6 address by its /64 network. A /64 is what one subscriber is given, so keying by
 * the full address would let one attacker rotate through 2^64 of them.
 */
export function clientAddressKey(address: string | undefined): string {
  // A plain IPv4 address needs no parsing; IPv6 ones (a dual-stack socket's IPv4-mapped peers
  // included) are parsed once and remembered.
  if (!address?.includes(":")) return address ?? "";
  return ipv6Key(address) ?? address;
}

/**
 * The site of an address key, for a share that many addresses of one client could split between
 * them: an IPv6 key's /48 (what one site is commonly given, 65,536 /64s), an IPv4 key as it is.
 */
export function siteKey(key: string): string {
  if (!key.endsWith("::/64")) return key;
  return `${key.split(":").slice(0, 3).join(":")}::/48`;
}

let warnedUntrusted = false;

/** The last comma-separated entry of a header, the one the proxy in front of the host wrote. */
function lastEntry(value: string | string[]): string {
  const header = Array.isArray(value) ? value.join(",") : value;
  return header.slice(header.lastIndexOf(",") + 1).trim();
}

/**
 * Whether the client reached the host over HTTPS: with `trustProxy`, when the last entry of
 * `X-Forwarded-Proto` (the one the proxy wrote) is `https`; without it, never (the host itself
 * speaks plain HTTP, and a client could send the header). A client that forges it behind a
 * trusted proxy only gets cookies its own plain-HTTP requests will not carry back.
 */
export function reachedOverTls(req: IncomingMessage, trustProxy: boolean): boolean {
  const proto = req.headers["x-forwarded-proto"];
  return trustProxy && proto !== undefined && lastEntry(proto).toLowerCase() === "https";
}

/**
 * The address of the client that sent `req`: the peer of its socket, or with `trustProxy` (the host
 * is reachable only through one reverse proxy, which appends the address it was reached from to
 * `X-Forwarded-For`) the last address of that header. Only the last one: every earlier entry came
 * from the client. Without `trustProxy` the header is ignored, and a host that sees it says once
 * that every client behind the proxy shares one address's limits.
 */
export function clientAddressOf(req: IncomingMessage, trustProxy: boolean): string {
  const forwarded = req.headers["x-forwarded-for"];
  if (trustProxy && forwarded !== undefined) {
    const last = lastEntry(forwarded);
    if (isIP(last) !== 0) return last;
  } else if (forwarded !== undefined && !warnedUntrusted) {
    warnedUntrusted = true;
    console.warn(
      "platform host: requests carry X-Forwarded-For, which is ignored: every client behind that proxy shares one address's request quota, guest and socket limits. If the host is reachable only through the proxy, start it with --trust-proxy.",
    );
  }
  return req.socket.remoteAddress ?? "";
}

/**
 * Connections open per client address ({@link clientAddressKey}), each counted until its socket
 * closes, and refused beyond `limit`.
 */
export class SocketsPerClient {
  private readonly open = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Counts `socket` for `address` until it closes; false (not counted) when the address is at its limit. */
  admit(address: string | undefined, socket: Duplex): boolean {
    const key = clientAddressKey(address);
    const held = this.open.get(key) ?? 0;
    if (held >= this.limit) return false;
    this.open.set(key, held + 1);
    socket.once("close", () => {
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    });
    return true;
  }
}
