import type { CallUsage } from "../../sdk/protocol/index.js";

/**
 * What call execution reports as calls end, for the host's metrics: an interface of this layer
 * (the metrics implement it); the default ignores it. `kind` is the call log's kind, `status`
 * `ok` or the error code the caller got.
 */
export interface CallObserver {
  /** A call ran and settled after `seconds`, having used `usage`. */
  settled(deployment: string, kind: string, status: string, seconds: number, usage: CallUsage): void;
  /** A call was refused before it ran: no such handler, access denied, or quarantined. */
  refused(deployment: string, kind: string, status: string): void;
}

/** Reports nowhere. */
export const IGNORE_CALLS: CallObserver = { settled() {}, refused() {} };
