import { PlatformError } from "../sdk/values/index.js";

/**
 * Why a command could not listen on `address:port`, from the system's error code (`EADDRINUSE`,
 * `EACCES`, ...; recognised by code, never by message), saying which port and how to pick
 * another, since a busy port is nearly always another server the user started.
 */
export function listenFailure(address: string, port: number, code: string | undefined): PlatformError {
  const where = `${address}:${port}`;
  const message =
    code === "EADDRINUSE"
      ? `Port ${port} is in use (${where}): another server is listening there. Stop it, or pick another port with --port <n>.`
      : code === "EACCES"
        ? `Not allowed to listen on port ${port} (${where}): ports below 1024 need privileges. Pick another with --port <n>.`
        : code === "EADDRNOTAVAIL"
          ? `Cannot listen on ${where}: no network interface has that address. Check --hostname.`
          : `Cannot listen on ${where} (${code ?? "unknown error"}). Pick another port with --port <n>.`;
  return new PlatformError("unavailable", message);
}

/** True when `error` is a system error from `listen` (it has a `syscall` of "listen" and a `code`). */
export function isListenError(error: unknown): error is NodeJS.ErrnoException {
  return (error as NodeJS.ErrnoException | null)?.syscall === "listen";
}
