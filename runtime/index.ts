/**
 * The isolate runtime: loaded as one script into every isolate before the capsule bundle. It locks
 * down code generation, installs determinism, captures the bridge, and exposes one dispatcher the
 * host takes a reference to (and then deletes from the global scope).
 */

import { installDeterminism } from "./determinism.js";
import { dispatch } from "./dispatch.js";
import { lockDownCodeGeneration } from "./lockdown.js";
import "./bridge.js";

lockDownCodeGeneration();
installDeterminism();
(globalThis as Record<string, unknown>).__platform_dispatch = dispatch;
