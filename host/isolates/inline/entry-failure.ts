import type { Transport } from "../transport.js";
import { InlineAbandoned } from "./abandoned.js";
import type { InlineHost } from "./inline-host.js";
import type { InlineStanding } from "./policy.js";
import { InlineSentinel } from "./sentinel.js";
import type { TurnEntries } from "./turn-queue.js";

/**
 * Fails every inline execution of `transport` in flight with `reason`; none of them is entered
 * again (the deployment was demoted: its callers run them again, on the isolate's thread).
 */
export function abandonAll(host: InlineHost, transport: Transport, reason: Error): void {
  host.running.forEach((execution, requestId) => {
    if (execution.transport !== transport) return;
    host.running.delete(requestId);
    execution.fail(reason);
  });
}

/** Moves the deployment to its own thread for the cool-down; inline executions run again there. */
export function demote(host: InlineHost, standing: InlineStanding, transport: Transport): void {
  standing.demote();
  abandonAll(host, transport, new InlineAbandoned());
}

/**
 * Why an inline entry threw, from what the host itself knows, never from isolated-vm's message:
 * the runtime's entry points never throw, so the entry was stopped by the sentinel (it says so),
 * by isolated-vm at the memory limit (the isolate is gone), or by isolated-vm's `timeout`, which
 * only entries the sentinel did not watch carry. A sentinel stop demotes the deployment (a fresh
 * isolate runs its handlers on its thread), unless `breachesLimit`: the execution had no more CPU
 * left than the slice, so it breached the handler's limit. A `timeout`, which counts wall time,
 * that stopped an entry using little CPU (the host was descheduled) abandons only its executions.
 * `transport` made the entry for `who` in the sentinel's `slot`, and `usedNs` is the CPU it used.
 */
export function entryFailed(
  host: InlineHost,
  standing: InlineStanding,
  transport: Transport & Pick<TurnEntries, "abandon">,
  slot: number,
  who: number | readonly number[],
  breachesLimit: boolean,
  usedNs: bigint,
): void {
  if (InlineSentinel.shared().stopped(slot)) {
    if (!breachesLimit) demote(host, standing, transport);
    host.stop(breachesLimit ? "cpu" : "stopped");
  } else if (host.isolate.isDisposed) {
    host.stop("memory");
  } else if (!InlineSentinel.shared().lastEntryTimed) {
    host.stop("failed");
  } else if (breachesLimit) {
    host.stop("cpu");
  } else if (usedNs >= BigInt(standing.policy.sliceMs) * 500_000n) {
    demote(host, standing, transport);
  } else if (typeof who === "number") {
    transport.abandon(who);
  } else {
    for (const requestId of who) transport.abandon(requestId);
  }
}
