import type { IncomingMessage } from "node:http";
import { errorFromWire } from "../sdk/client/errors.js";
import type { PlatformError } from "../sdk/values/index.js";

/**
 * A failed response as the server meant it: its error envelope `{ error: { code, message } }`
 * decoded by the client SDK's `errorFromWire`, so every command reports the server's own code and
 * message (a body that is not an envelope keeps a code derived from the status).
 */
export function remoteError(status: number, body: string | Buffer): PlatformError {
  let wire: unknown;
  try {
    wire = (JSON.parse(body.toString()) as { error?: unknown } | null)?.error;
  } catch {
    // not JSON: errorFromWire falls back on the status
  }
  return errorFromWire(wire, status);
}

/** Reads a failed streamed response to its end and decodes it with {@link remoteError}. */
export function remoteErrorOf(response: IncomingMessage): Promise<PlatformError> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.on("error", reject);
    response.on("end", () => resolve(remoteError(response.statusCode ?? 500, Buffer.concat(chunks))));
  });
}
