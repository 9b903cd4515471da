import { writeSync } from "node:fs";

/**
 * Ends this process at once on an error nothing handled (an exception, or a rejected promise
 * nobody awaited). Node would exit too, but its exit waits for isolated-vm's threads, and a
 * tenant's isolate busy on its own thread need not end (the inline sentinel's did not either, before
 * it returned on exit): the process hung with its socket open, answering no one,
 * and the supervisor, which restarts a server only once it has exited, never did. Killing the
 * process skips that wait; under `platform host` the supervisor then starts a new server.
 */
export function exitOnUnhandledErrors(name: string): void {
  process.on("uncaughtException", (error) => {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    writeSync(2, `${name}: unhandled error, stopping: ${text}\n`);
    process.kill(process.pid, "SIGKILL");
  });
}
