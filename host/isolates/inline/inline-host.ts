import type ivm from "isolated-vm";
import type { CpuMeter } from "../cpu-meter.js";
import type { IsolateLimits, StopReason } from "../limits.js";
import type { RunningExecution } from "../transport.js";
import type { SlotTable } from "./slot-table.js";

/** What the inline transport needs of its isolate. */
export interface InlineHost {
  readonly isolate: ivm.Isolate;
  readonly running: SlotTable<RunningExecution>;
  readonly meter: CpuMeter;
  readonly limits: IsolateLimits;
  /** Executions on the isolate's own thread now. */
  readonly threaded: { readonly inFlight: number };
  /** Stops the isolate for `reason` (unless it was stopped already) and fails what runs in it. */
  stop(reason: StopReason): void;
}
