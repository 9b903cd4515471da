import { LIMITS } from "../../sdk/protocol/index.js";
import { WorkerQueue } from "../threads/worker-queue.js";
import type { JsonBodyJob } from "./json-body-worker.js";

/** The host's one JSON thread (started at the first large body). */
const jsonThread = new WorkerQueue<JsonBodyJob, unknown>(
  { base: import.meta.url, name: "json-body-worker" },
  {
    jobMs: LIMITS.jsonParseMs,
    queueBytes: LIMITS.jsonParseQueueBytes,
    queueBytesEach: LIMITS.jsonParseQueueBytesEach,
  },
  {
    full: "Too many large request bodies are waiting to be read; retry in a moment.",
    stuck: "The request body took too long to read; retry later.",
    failed: "The request body could not be read; retry later.",
  },
);

/**
 * Checks and parses the JSON body `bytes` as parseJsonText does, on the JSON thread in `caller`'s
 * turn (see {@link WorkerQueue}): callers' bodies take turns there, one each. With `decodeClient`
 * (a deploy body), the well-formed base64 `data` of its `client` files comes back decoded, as
 * Uint8Arrays. `bytes` is handed over when it owns its whole memory (it cannot be read here
 * afterwards), else copied.
 */
export function parseJsonOffThread(bytes: Buffer, caller: string, decodeClient = false): Promise<unknown> {
  return runOffThread(bytes, caller, { decodeClient });
}

/**
 * Checks that the JSON body `bytes` parses, as parseJsonText does, on the JSON thread in `caller`'s
 * turn, without answering its value (the caller has its text). `bytes` is handed over as by
 * {@link parseJsonOffThread}.
 */
export async function checkJsonOffThread(bytes: Buffer, caller: string): Promise<void> {
  await runOffThread(bytes, caller, { decodeClient: false, checkOnly: true });
}

function runOffThread(bytes: Buffer, caller: string, options: Omit<JsonBodyJob, "bytes">): Promise<unknown> {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  const input = whole ? new Uint8Array(bytes.buffer as ArrayBuffer) : new Uint8Array(bytes);
  return jsonThread.run(Object.assign({ bytes: input }, options), input.byteLength, caller, [
    input.buffer as ArrayBuffer,
  ]);
}
