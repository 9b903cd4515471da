/**
 * Child process for the threaded crash test: runs one handler on its isolate's own thread (inline
 * runs off, time limits far away) that makes V8 give up on the isolate, with the supervisor
 * channel on descriptor 3. The isolate's crash callback must report the bundle, deployment and owner there and end
 * the process.
 */
import { CapsuleIsolate } from "../../host/isolates/capsule-isolate.js";
import { DEFAULT_INLINE_POLICY, InlineStanding } from "../../host/isolates/inline/index.js";
import { DEFAULT_ISOLATE_LIMITS } from "../../host/isolates/limits.js";
import { queryRequest } from "./query-request.js";

const CODE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: {} } },
  definition: { queries: { boom: async () => new Array(2 ** 26).fill(1.5).length } },
};`;

const isolate = await CapsuleIsolate.create(
  CODE,
  "threaded-crash-bundle",
  { ...DEFAULT_ISOLATE_LIMITS, memoryMb: 128, cpuMs: 600_000, wallMs: 600_000 },
  new InlineStanding({ ...DEFAULT_INLINE_POLICY, enabled: false }),
  { tenant: { deployment: "crashing-app", owner: "dev_crasher" } },
);
process.stdout.write("running\n");
const answer = await isolate.execute(queryRequest("boom"), () => null).catch((error: unknown) => error);
process.stdout.write(`survived: ${JSON.stringify(answer)}\n`);
