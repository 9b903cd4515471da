import type { OutgoingHttpHeaders } from "node:http";
import { InvalidArgumentError } from "commander";
import { isLoopbackHost } from "../host/http/loopback-host.js";
import { printWarning } from "./output.js";

/** Set to `1`, tokens may go over plain HTTP to another machine (a network the user trusts). */
export const ALLOW_HTTP_ENV = "PLATFORM_ALLOW_HTTP";

/** Origins already warned about in this process: a command's requests warn once. */
const warned = new Set<string>();

/**
 * Refuses to send a token (an `Authorization` header) over plain HTTP to a host that is not this
 * machine, unless `PLATFORM_ALLOW_HTTP=1`, and then warns: anyone on the network between reads it,
 * and a deploy's server env with it. Every token, wherever it came from (`--token`, the
 * environment, a stored login): `PLATFORM_ADMIN_TOKEN=... platform logs todo --host
 * http://192.0.2.2:...` sent the operator's token to a LAN address with only a warning (an attack
 * review, 2026-12-06). A usage error (exit 2), before anything is sent.
 */
export function checkTokenTransport(url: URL, headers: OutgoingHttpHeaders | undefined): void {
  if (url.protocol !== "http:" || isLoopbackHost(url.host)) return;
  if (!Object.keys(headers ?? {}).some((name) => name.toLowerCase() === "authorization")) return;
  if (process.env[ALLOW_HTTP_ENV] === "1") {
    if (!warned.has(url.origin))
      printWarning(
        `${url.origin} is plain HTTP: your token (and a deploy's server env) crosses the network unencrypted (${ALLOW_HTTP_ENV}=1).`,
      );
    warned.add(url.origin);
    return;
  }
  throw new InvalidArgumentError(
    `${url.origin} is plain HTTP and not this machine: your token (and a deploy's server env) would cross the network unencrypted, so nothing was sent. Use https:// (docs/operators.md puts TLS in front of the host), or set ${ALLOW_HTTP_ENV}=1 on a network you trust.`,
  );
}
