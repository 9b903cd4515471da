import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { errorFromWire } from "../sdk/client/errors.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";

/**
 * Whether an answer's status means the host did what was asked: 2xx only. A redirect is not
 * success: the CLI follows none (Node's client does not, and following would take the token to
 * wherever it points), and a TLS proxy's `301` to https made `platform deploy --host http://...`
 * print "deployed" and exit 0 with nothing deployed (an attack review, 2026-12-06).
 */
export function succeeded(status: number | undefined): boolean {
  return status !== undefined && status >= 200 && status < 300;
}

/** What {@link remoteError} reads of a failed answer. */
export interface FailedAnswer {
  /** The URL asked for. */
  url: string | URL;
  status: number;
  headers: IncomingHttpHeaders;
  body: string | Buffer;
}

/**
 * A failed answer as the server meant it: a redirect names where it points and what to do
 * ({@link redirectError}); anything else is decoded from its error envelope
 * `{ error: { code, message } }` by the client SDK's `errorFromWire`, so every command reports the
 * server's own code and message (a body that is not an envelope keeps a code derived from the
 * status).
 */
export function remoteError(answer: FailedAnswer): PlatformError {
  if (answer.status >= 300 && answer.status < 400)
    return redirectError(answer.status, answer.headers.location, new URL(answer.url));
  let wire: unknown;
  try {
    wire = (JSON.parse(answer.body.toString()) as { error?: unknown } | null)?.error;
  } catch {
    // not JSON: errorFromWire falls back on the status
  }
  return errorFromWire(wire, answer.status);
}

/** Characters of a redirect's `Location` shown in its error. */
const LOCATION_SHOWN = 200;

/**
 * The error for a redirect: nothing was done, where it points, and, for plain HTTP sent to https
 * of the same host (a TLS proxy's usual answer), the `--host` to use instead.
 */
function redirectError(status: number, location: string | undefined, url: URL): PlatformError {
  const target =
    location !== undefined && URL.canParse(location, url.href) ? new URL(location, url) : undefined;
  const done = "nothing was done (the CLI follows no redirect: it would take your token along)";
  if (!target)
    return new PlatformError(
      "bad_request",
      `${url.origin} answered with a redirect (${status}) that says nowhere to go: ${done}. Is it the host's control plane?`,
    );
  const shown =
    target.href.length > LOCATION_SHOWN ? `${target.href.slice(0, LOCATION_SHOWN)}...` : target.href;
  const toHttps =
    url.protocol === "http:" && target.protocol === "https:" && target.hostname === url.hostname;
  const advice = toHttps
    ? url.pathname.startsWith("/v1/")
      ? ` Use --host ${target.origin}.`
      : " Use https:// in the address you gave."
    : " Use the address it points to instead, if you trust it.";
  return new PlatformError(
    "bad_request",
    `The host answered with a redirect to ${shown} (${status}); ${done}.${advice}`,
  );
}

/**
 * Reads a failed streamed response to its end and decodes it with {@link remoteError}. At most
 * {@link LIMITS.cliAnswerBytes} are read: an error envelope is small, and past that the body is
 * dropped unread and the error told from the status alone.
 */
export function remoteErrorOf(response: IncomingMessage, url: string | URL): Promise<PlatformError> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const decode = (body: Buffer) =>
      remoteError({ url, status: response.statusCode ?? 500, headers: response.headers, body });
    response.on("data", (chunk: Buffer) => {
      received += chunk.length;
      chunks.push(chunk);
      if (received > LIMITS.cliAnswerBytes) {
        response.destroy();
        resolve(decode(Buffer.alloc(0)));
      }
    });
    response.on("error", reject);
    response.on("end", () => resolve(decode(Buffer.concat(chunks))));
  });
}
