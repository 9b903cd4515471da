import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { LIMITS } from "../../sdk/protocol/index.js";
import { clientAddressKey } from "./client-address.js";

/** The connections a server keeps at once, and who hears of one closed for that. */
export interface ConnectionLimit {
  maxConnections: number;
  /** Told of each connection closed as it arrived. */
  dropped: () => void;
  /** Each connection's address key, to hold an address to its share (none: no share per address). */
  addressKey?: (address: string | undefined) => string;
}

/**
 * The host's limit on connections: `maxConnections`, else {@link connectionCap} of the process's
 * open-files limit; and `perAddress`, each address's share, as the host's other per-client limits
 * (off when its request quotas are, and behind a trusted proxy, whose connections all come from
 * one address).
 */
export function hostConnectionLimit(
  maxConnections: number | undefined,
  perAddress: boolean,
  dropped: () => void,
): ConnectionLimit {
  const limit = { maxConnections: maxConnections ?? connectionCap(openFilesLimit()), dropped };
  return perAddress ? Object.assign(limit, { addressKey: clientAddressKey }) : limit;
}

/**
 * The process's soft limit of open files, from `/proc/self/limits` (Linux; Node raises the soft
 * limit to the hard one as it starts); undefined where it cannot be read, or is unlimited.
 */
export function openFilesLimit(limits = "/proc/self/limits"): number | undefined {
  let text: string;
  try {
    text = readFileSync(limits, "utf8");
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\d+)\s/m.exec(text)?.[1];
  return soft === undefined ? undefined : Number(soft);
}

/**
 * How many client connections the host's server keeps at once, sockets of every kind together
 * (Node's `server.maxConnections`): half of what the open-files limit ({@link openFilesLimit})
 * leaves past {@link LIMITS.hostFdReserve} (or past half of a limit too small for that), as a
 * connection may hold a second descriptor (a stored file it downloads, an S3 socket). Past it, a
 * new connection is closed as soon as it is accepted. Without a cap, clients holding connections
 * could take every file descriptor, and then the database, which opens files as it works, would
 * fail every tenant's reads and writes, not only new connections.
 */
export function connectionCap(openFiles: number | undefined): number {
  if (openFiles === undefined) return Number.POSITIVE_INFINITY;
  const left = Math.max(openFiles - LIMITS.hostFdReserve, openFiles / 2);
  return Math.floor(left / 2);
}

/**
 * Counts each client address's connections (by `keyOf`: an IPv6 address's /64) and closes, as it
 * arrives, a connection past {@link LIMITS.connectionsPerAddress} of its address: one address
 * holding silent connections would otherwise fill the host's cap and lock every tenant's clients
 * out. Returns the listener for the server's `connection` event; `dropped` hears of each close.
 */
export function perAddressConnections(
  keyOf: (address: string | undefined) => string,
  dropped: () => void,
  perAddress: number = LIMITS.connectionsPerAddress,
): (socket: Socket) => void {
  const held = new Map<string, number>();
  return (socket) => {
    const key = keyOf(socket.remoteAddress);
    const count = held.get(key) ?? 0;
    if (count >= perAddress) {
      dropped();
      socket.destroy();
      return;
    }
    held.set(key, count + 1);
    socket.once("close", () => {
      const left = (held.get(key) ?? 1) - 1;
      if (left > 0) held.set(key, left);
      else held.delete(key);
    });
  };
}
