import { readFileSync } from "node:fs";
import { LIMITS } from "../../sdk/protocol/index.js";

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
 * (Node's `server.maxConnections`): the open-files limit ({@link openFilesLimit}) less {@link LIMITS.hostFdReserve}, or
 * half of a limit too small for that. Past it, a new connection is closed as soon as it is
 * accepted. Without a cap, clients holding connections (from many addresses, each within its own
 * limits) could take every file descriptor, and then the database, which opens files as it works,
 * would fail every tenant's reads and writes, not only new connections.
 */
export function connectionCap(openFiles: number | undefined): number {
  if (openFiles === undefined) return Number.POSITIVE_INFINITY;
  const reserve = LIMITS.hostFdReserve;
  return openFiles >= 2 * reserve ? openFiles - reserve : Math.floor(openFiles / 2);
}
