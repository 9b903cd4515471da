/**
 * A process that calls `process.exit(0)` while the inline sentinel holds an isolate: registered
 * ahead (the sentinel asleep, as beside a host's spare) or registered (the sentinel ticking). The
 * sentinel's loop runs on an isolated-vm thread, and exit waits for it: it must return when the
 * process exits. Prints what it registered before exiting. See host/isolates/inline/sentinel.test.ts.
 * Usage: exiting-with-sentinel.ts ahead|registered.
 */
import ivm from "isolated-vm";
import { InlineSentinel } from "../../host/isolates/inline/sentinel.js";

const ahead = process.argv[2] === "ahead";
const sentinel = InlineSentinel.shared();
const isolate = new ivm.Isolate({ memoryLimit: 16 });
if (ahead) sentinel.registerAhead(isolate, 20);
else sentinel.register(isolate, 20);
for (let i = 0; i < 400 && !sentinel.upToDate; i++) await new Promise((resolve) => setTimeout(resolve, 5));
process.stdout.write(`${ahead ? "ahead" : "registered"} ${sentinel.upToDate}\n`);
process.exit(0);
