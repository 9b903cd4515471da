/**
 * The isolate runtime: loaded as one script into every isolate before the capsule bundle. It locks
 * down code generation, installs determinism, captures the bridge, and exposes the entry points the
 * host takes references to (and then deletes from the global scope): the threaded dispatcher, the
 * inline dispatcher, and the inline resume.
 */

import { finishInline, resumeInline } from "./bridge.js";
import { installDeterminism } from "./determinism.js";
import { dispatch } from "./dispatch.js";
import { lockDownCodeGeneration } from "./lockdown.js";

lockDownCodeGeneration();
installDeterminism();
const global = globalThis as Record<string, unknown>;
global.__platform_dispatch = (requestId: number | null, requestJson: string): Promise<string> =>
  dispatch(requestId, requestJson, false);
global.__platform_dispatch_inline = (requestId: number, requestJson: string): void => {
  void dispatch(requestId, requestJson, true).then((responseJson) => finishInline(requestId, responseJson));
};
global.__platform_resume_inline = resumeInline;
