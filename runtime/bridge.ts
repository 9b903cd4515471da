/**
 * The isolate end of the one syscall bridge. The host installs `__platform_bridge` (an async
 * function taking and returning JSON strings); this module captures it and removes it from the
 * global scope before capsule code runs, so capsules can reach the host only through `ctx`.
 */
import type { SyscallArgs, SyscallOp, SyscallResponse } from "../sdk/protocol/index.js";
import { type ErrorCode, PlatformError } from "../sdk/values/index.js";

type RawBridge = (json: string) => Promise<string>;

const global = globalThis as Record<string, unknown>;
const raw = global.__platform_bridge as RawBridge | undefined;
delete global.__platform_bridge;

/** Calls host op `op` for request `requestId`; rejects with a {@link PlatformError} on failure. */
export async function syscall<Op extends SyscallOp>(
  requestId: number,
  op: Op,
  args: SyscallArgs[Op],
): Promise<unknown> {
  if (!raw) throw new PlatformError("internal", "The platform bridge is missing.");
  const response = JSON.parse(await raw(JSON.stringify({ requestId, op, args }))) as SyscallResponse;
  if (response.ok) return response.value;
  throw new PlatformError(response.error.code as ErrorCode, response.error.message);
}
