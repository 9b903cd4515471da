/**
 * The isolate end of the one syscall bridge. The host installs `__platform_bridge` (an async
 * function taking and returning JSON strings); this module captures it and removes it from the
 * global scope before capsule code runs, so capsules can reach the host only through `ctx`.
 */
import type { SyscallArgs, SyscallOp, SyscallResponse } from "../sdk/protocol/index.js";
import { type ErrorCode, PlatformError } from "../sdk/values/index.js";
import { type ExecutionState, resumeExecution } from "./determinism.js";

type RawBridge = (json: string) => Promise<string>;

const global = globalThis as Record<string, unknown>;
const raw = global.__platform_bridge as RawBridge | undefined;
delete global.__platform_bridge;

/**
 * Calls host op `op` for request `requestId`; rejects with a {@link PlatformError} on failure.
 * Re-enters the execution's deterministic state before user code continues.
 */
export async function syscall<Op extends SyscallOp>(
  execution: ExecutionState,
  requestId: number,
  op: Op,
  args: SyscallArgs[Op],
): Promise<unknown> {
  if (!raw) throw new PlatformError("internal", "The platform bridge is missing.");
  const text = await raw(JSON.stringify({ requestId, op, args }));
  resumeExecution(execution);
  const response = JSON.parse(text) as SyscallResponse;
  if (response.ok) return response.value;
  throw new PlatformError(response.error.code as ErrorCode, response.error.message);
}
