/**
 * The thread the SVG and XML script check runs on (see markup-checker.ts): it reads the whole file
 * several ways, up to 200 ms for 5 MB, which the host's main thread must not spend.
 */
import { parentPort } from "node:worker_threads";
import { markupScriptReason } from "./markup-script.js";

parentPort?.on("message", ({ id, bytes }: { id: number; bytes: Uint8Array }) => {
  parentPort?.postMessage({ id, reason: markupScriptReason(bytes) });
});
