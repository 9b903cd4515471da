/**
 * The thread large JSON bodies are parsed on (see json-off-thread.ts): a 60 MB deploy body takes
 * over 100 ms to decode, check and parse, which the host's main thread must not spend. A deploy
 * body's client files are decoded from base64 here too, and their bytes handed over rather than
 * copied back: copying 42 MB of base64 text back held the main thread 25-33 ms.
 */
import { LIMITS } from "../../sdk/protocol/index.js";
import { decodedSize, isStrictBase64 } from "../deployments/base64.js";
import { serveJobs } from "../threads/serve-jobs.js";
import { parseJsonText } from "./json-text.js";

/**
 * A body to parse; `decodeClient`: decode the well-formed base64 `data` of its `client` files;
 * `checkOnly`: answer nothing, only whether it parses (the caller keeps its text).
 */
export interface JsonBodyJob {
  bytes: Uint8Array;
  decodeClient: boolean;
  checkOnly?: boolean;
}

/**
 * Replaces each well-formed base64 `data` of `body.client` by its bytes, in memory of their own,
 * handing their buffers over; anything else is left for the deploy's checks to refuse.
 */
function decodeClientFiles(body: unknown, handOver: (buffer: ArrayBuffer) => void): void {
  const client = (body as { client?: unknown } | null)?.client;
  if (!Array.isArray(client)) return;
  let total = 0;
  for (const file of client) {
    const data = (file as { data?: unknown } | null)?.data;
    if (typeof data !== "string" || !isStrictBase64(data)) continue;
    total += decodedSize(data);
    // Past the limit the deploy refuses the client by its sizes, which base64 text tells it as well.
    if (total > LIMITS.clientBytes) return;
    const bytes = new Uint8Array(Buffer.from(data, "base64"));
    (file as { data: Uint8Array }).data = bytes;
    handOver(bytes.buffer as ArrayBuffer);
  }
}

serveJobs((job: JsonBodyJob, handOver) => {
  const { bytes } = job;
  const value = parseJsonText(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
  if (job.checkOnly) return null;
  if (job.decodeClient) decodeClientFiles(value, handOver);
  return value;
});
