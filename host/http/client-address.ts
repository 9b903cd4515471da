import type { Duplex } from "node:stream";
import ipaddr from "ipaddr.js";

/**
 * The key a client's address is limited by: an IPv4 address as it is (an IPv4-mapped IPv6 one
 * too), an IPv6 address by its /64 network. A /64 is what one subscriber is given, so keying by
 * the full address would let one attacker rotate through 2^64 of them.
 */
export function clientAddressKey(address: string | undefined): string {
  // The common case first: a plain IPv4 address needs no parsing (this runs on every request).
  if (!address?.includes(":") || !ipaddr.isValid(address)) return address ?? "";
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const network = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${network.join(":")}::/64`;
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
