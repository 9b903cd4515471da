/**
 * The thread large JSON bodies are parsed on (see json-off-thread.ts): a 60 MB deploy body takes
 * over 100 ms to decode, check and parse, which the host's main thread must not spend.
 */
import { serveJobs } from "../threads/serve-jobs.js";
import { parseJsonText } from "./json-text.js";

serveJobs((bytes: Uint8Array) =>
  parseJsonText(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")),
);
