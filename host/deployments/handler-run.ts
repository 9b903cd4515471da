import { type CallUsage, type DispatchRequest, LIMITS } from "../../sdk/protocol/index.js";
import { type BudgetUsage, noUsage, type Transaction } from "../db/index.js";
import { type HandlerLogEntry, type IsolateKeeper, transactionSyscalls } from "../isolates/index.js";
import { handlerError } from "./dispatch.js";
import { isLegacyRequest, runLegacy } from "./legacy/index.js";
import type { DeploymentRecord } from "./records.js";
import { redactSecrets } from "./redact.js";

/** Usage before the transaction reported any (read only, never written). */
const NO_USAGE: Readonly<BudgetUsage> = Object.freeze(noUsage());

/**
 * One handler call in a deployment's isolate, and what it used: the isolate reports CPU time, the
 * transaction the budget (through {@link onUsage}), and the wall time runs from construction. A
 * run may be attempted more than once (see `retryAbandoned`); the last attempt's figures count.
 */
export class HandlerRun {
  private cpuMs = 0;
  private budget: Readonly<BudgetUsage> = NO_USAGE;
  private stack: string | undefined;
  private readonly started = performance.now();

  constructor(
    private readonly runner: IsolateKeeper,
    private readonly request: DispatchRequest,
    private readonly record: DeploymentRecord,
  ) {}

  /** Receives the transaction's budget usage (as `RunOptions.onUsage`). */
  readonly onUsage = (used: BudgetUsage): void => {
    this.budget = used;
  };

  /**
   * Runs the handler inside `tx`, each isolate execution in an execution slot of the deployment's
   * lane (see `IsolateKeeper.run`); resolves to its JSON value (an endpoint's: its answer's text).
   */
  async inSlot(tx: Transaction, log: (entry: HandlerLogEntry) => void): Promise<string> {
    this.stack = undefined;
    if (isLegacyRequest(this.request)) {
      const legacy = await runLegacy(tx, this.runner, this.request, log, this.record);
      this.cpuMs = legacy.cpuMs;
      return legacy.valueJson;
    }
    const response = await this.runner.run(this.request, transactionSyscalls(tx, log), () =>
      tx.snapshot.prepare?.(),
    );
    this.cpuMs = response.cpuMs;
    if (!response.ok) {
      if (response.error.stack !== undefined)
        this.stack = redactSecrets(String(response.error.stack), this.record.env, LIMITS.errorStackChars);
      throw handlerError(response.error, this.record.env);
    }
    return response.valueJson;
  }

  /**
   * Where the handler failed, when it threw an `Error`: its stack frames at bundle positions, env
   * values redacted. Kept apart from the thrown `PlatformError` so no caller ever receives it; only
   * the call log does.
   */
  failureStack(): string | undefined {
    return this.stack;
  }

  /** What the call used so far (the call log and the caller read it once it settled). */
  usage(): CallUsage {
    const budget = this.budget;
    return {
      rowsReturned: budget.rowsReturned,
      rowsRead: budget.rowsRead,
      bytesRead: budget.bytesRead,
      rangesRead: budget.rangesRead,
      indexScans: budget.indexScans,
      writes: budget.writes,
      cpuMs: this.cpuMs,
      wallMs: performance.now() - this.started,
    };
  }
}
