import type { DispatchRequest } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { CapsuleIsolate } from "./capsule-isolate.js";
import { coldStartLaps } from "./cold-start-trace.js";
import type { Tenant } from "./crash-subjects.js";
import { type HeapBudget, HeapWatch, nearMemoryLimit } from "./heap-budget.js";
import { InlineStanding } from "./inline/index.js";
import { IsolateDrain } from "./isolate-drain.js";
import type { IsolateFactory } from "./isolate-factory.js";
import { LimitStops, type StoppedLimit } from "./limit-stops.js";
import type { DeploymentLane } from "./scheduler.js";
import type { MeteredResponse, SyscallHandler } from "./transport.js";

const noHold = (): void => {};

/** Where a runner gets its capsule code from (the artifact store). */
export type ArtifactLoader = (hash: string) => Promise<string>;

/**
 * Runs one deployment's handlers in its isolate. Creates the isolate on first use (a cold start),
 * keeps it while it is healthy, and starts a fresh one after a limit breach.
 */
export class IsolateKeeper {
  private isolate: CapsuleIsolate | null = null;
  private starting: Promise<CapsuleIsolate> | null = null;
  private inFlight = 0;
  private readonly stops: LimitStops;
  /** The live isolate's last heap reading and a draining one's limit: the budget's share (heap-budget.ts). */
  readonly heap: HeapWatch;
  /** Set by {@link stop}: an isolate that finishes starting afterwards is freed at once. */
  private stopped = false;
  /** The isolates calls chose, and the one a redeploy replaced while calls still ran in it. */
  private readonly drain = new IsolateDrain();
  /** The deployment's owner as its callers' records last said (null: unclaimed), for crash reports. */
  private owner: string | null | undefined;
  lastUsed = Date.now();

  constructor(
    readonly deploymentId: string,
    public artifact: string,
    private readonly loadArtifact: ArtifactLoader,
    /** Where its isolates come from (the pool's: its limits, code cache and spare). */
    private readonly factory: IsolateFactory,
    /**
     * Where this deployment's calls wait for an execution slot: it bounds how many run in its
     * isolate at once and how many wait.
     */
    private readonly lane: DeploymentLane,
    /** Whether this deployment may run inline, kept across its isolates. */
    private readonly standing: InlineStanding = new InlineStanding(),
    /** Called when a new isolate goes live (the pool enforces its cap on live isolates then). */
    private readonly onLive: () => void = () => {},
    /** Called once per isolate stopped for a limit (the host's metrics count it). */
    onLimitStop: (limit: StoppedLimit) => void = () => {},
    /**
     * The deployment's id and incarnation, when known: its isolates may then keep a code cache of
     * their own, made after its code ran (see loadIsolate).
     */
    private readonly scope: () => string | undefined = () => undefined,
    /** The deployment's owner as the host knows it, for crash reports (it wins over callers'). */
    private readonly knownOwner: () => string | null | undefined = () => undefined,
    /** The host's budget of isolates' heaps, which this deployment's isolates count against. */
    heapBudget: HeapBudget | null = null,
  ) {
    this.stops = new LimitStops(deploymentId, () => this.lane.markBreached(), onLimitStop);
    this.heap = new HeapWatch(heapBudget, (bytes, isolate, onOwnThread) => {
      if (onOwnThread && nearMemoryLimit(bytes, isolate)) this.lane.markBreached();
    });
  }

  /** True while a handler of this deployment is in flight. */
  get busy(): boolean {
    return this.inFlight > 0;
  }

  /** True while the deployment shares the slots of deployments stopped for a limit lately. */
  get heldToBreachedSlots(): boolean {
    return this.lane.breached;
  }

  /** True when an isolate is loaded. */
  get isLive(): boolean {
    return this.isolate !== null && !this.isolate.isDisposed;
  }

  /** True when the next handler would run inline on the host's main thread. */
  get runsInline(): boolean {
    return this.isLive && (this.isolate as CapsuleIsolate).mayRunInline();
  }

  /** Heap bytes (used and external) of the live isolate, 0 when none is live; benchmarks report it. */
  heapBytes(): number {
    return this.isLive ? (this.isolate as CapsuleIsolate).heapBytesSync() : 0;
  }

  /** The loaded isolate when it runs the current artifact, else `null`. */
  private current(): CapsuleIsolate | null {
    const isolate = this.isolate;
    return isolate && !isolate.isDisposed && isolate.artifact === this.artifact ? isolate : null;
  }

  private async live(): Promise<CapsuleIsolate> {
    const current = this.current();
    if (current) return current;
    this.replaceLive();
    if (!this.starting) {
      const artifact = this.artifact;
      const lap = coldStartLaps();
      this.starting = this.loadArtifact(artifact)
        .then((code) => {
          lap("artifact");
          const scope = this.scope();
          const tenant = this.tenant();
          return this.factory.create(
            code,
            artifact,
            this.standing,
            scope === undefined ? { tenant } : { scope, tenant },
          );
        })
        .finally(() => {
          this.starting = null;
        });
    }
    const started = await this.starting;
    if (this.stopped) {
      started.dispose();
      throw new PlatformError("unavailable", `Deployment ${this.deploymentId} was stopped. Retry in 1 s.`, {
        retryAfterSeconds: 1,
      });
    }
    // Redeployed while it started: the old code serves no request (nor does it replace the new
    // artifact's isolate the deploy installed meanwhile).
    const now = this.current();
    if (now || started.artifact !== this.artifact) {
      if (now !== started) started.dispose();
      return now ?? this.live();
    }
    this.install(started);
    return started;
  }

  /**
   * Whom this deployment's code runs for, in crash reports and the scheduler's shares per owner:
   * the owner the host knows, else the one its callers named.
   */
  tenant(): Tenant {
    // The newest record this host knows wins over a caller's, which may predate a claim.
    const known = this.knownOwner();
    return { deployment: this.deploymentId, owner: known !== undefined ? known : this.owner };
  }

  /**
   * The deployment's owner as a caller's record says (null: unclaimed); its live isolate is named
   * again when that changed (a claim), so a crash counts against the developer it belongs to now.
   */
  ownedBy(owner: string | null): void {
    if (owner === this.owner) return;
    this.owner = owner;
    this.current()?.serveFor(this.tenant());
  }

  /** Installs an already-loaded isolate (the deploy pipeline's probe), replacing the current one. */
  adopt(isolate: CapsuleIsolate): void {
    // From now on it serves calls (install names it): a crash in it is no longer one of deploying.
    this.artifact = isolate.artifact;
    if (this.isolate !== isolate) this.replaceLive();
    this.install(isolate);
  }

  /** Takes the live isolate out: it drains while calls run in it, counted once no longer live. */
  private replaceLive(): void {
    const old = this.isolate;
    this.isolate = null;
    this.drain.replace(old, (draining) => this.heap.drains(draining.limits.memoryMb * 1024 * 1024));
    this.heap.watch(null);
  }

  /**
   * Makes `isolate` the one that serves calls, named as the deployment is now (its owner may have
   * changed while it started: a claim). A stop for its CPU budget with none of its calls in flight
   * (code a handler left running: see CpuBudget) counts as a stop for its CPU limit, though no
   * call fails for it.
   */
  private install(isolate: CapsuleIsolate): void {
    this.isolate = isolate;
    this.heap.watch(isolate);
    isolate.serveFor(this.tenant());
    isolate.onStrayStop = () => this.limitStop(isolate, "cpu");
    this.onLive();
  }

  /**
   * Runs one request in the deployment's isolate (starting one if needed) once its lane gives it an
   * execution slot; refused with `503 unavailable` when too many of its calls already wait, or
   * while the deployment is paused for stopping again and again (see BreachPause); a paused
   * deployment's calls are refused before they wait for a slot, and again when they get one.
   * `beforeExecute` runs once the call has its slot, beside the isolate's start if it needs one
   * (a reader's database snapshot may begin then: `KvSnapshot.prepare`).
   */
  run(
    request: DispatchRequest,
    onSyscall: SyscallHandler,
    beforeExecute?: () => Promise<void> | undefined,
  ): Promise<MeteredResponse> {
    try {
      this.stops.pause.check();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.lane.run(async () => {
      this.stops.pause.check();
      this.inFlight++;
      let isolate: CapsuleIsolate | null = null;
      let release = noHold;
      try {
        const prepared = beforeExecute?.();
        isolate = this.current() ?? (await this.live());
        release = this.drain.hold(isolate);
        await prepared;
        this.lastUsed = Date.now();
        const response = await isolate.execute(request, onSyscall);
        this.stops.answered();
        this.heap.afterCall(isolate, response.onOwnThread);
        return response;
      } catch (error) {
        // Every execution in flight fails when the isolate is stopped: the stop counts once.
        if (isolate !== null && this.stops.failed(error, isolate)) this.forgetStopped(isolate);
        throw error;
      } finally {
        release();
        this.inFlight--;
        this.lastUsed = Date.now();
      }
    });
  }

  /** Counts a stop of `isolate` for `limit` (see {@link LimitStops}). */
  private limitStop(isolate: CapsuleIsolate, limit: StoppedLimit): void {
    this.stops.stopped(isolate, limit);
    this.forgetStopped(isolate);
  }

  /** A stopped isolate's heap no longer counts against the host's budget. */
  private forgetStopped(isolate: CapsuleIsolate): void {
    if (isolate === this.isolate) this.heap.watch(null);
  }

  /**
   * Forgets the heap reading of an isolate that is gone by other means than this keeper's (the
   * sentinel, isolated-vm at its memory limit): kept, it counted against the host's budget for good.
   */
  forgetGoneHeap(): void {
    if (!this.isLive && this.heap.liveBytes > 0) this.heap.watch(null);
  }

  /** Reads the live isolate's heap while calls run in it, when due (see HeapWatch.whileBusy). */
  weighWhileBusy(): void {
    const isolate = this.current();
    if (isolate && this.busy) this.heap.whileBusy(isolate);
  }

  /**
   * Stops the live isolate, and one draining, calls in flight and all, because the host's isolates
   * hold more memory than their budget (see heap-enforcement.ts); their calls fail with
   * `out_of_memory`, the live one's counting as a stop for its memory. Their heaps leave the budget
   * at once.
   */
  stopForHostMemory(): void {
    const drained = this.drain.stop("host-memory");
    if (drained) this.stops.notCounted(drained);
    // The live one, whatever artifact it runs: its reading is what the budget counted.
    const isolate = this.isolate;
    if (!isolate || isolate.isDisposed) return;
    this.heap.watch(null);
    isolate.stop("host-memory");
  }

  /** Drops the isolate (eviction); the next request starts a new one. */
  evict(): Promise<void> {
    const isolate = this.isolate;
    this.isolate = null;
    this.heap.watch(null);
    return isolate ? isolate.retire(() => this.loadArtifact(isolate.artifact)) : Promise.resolve();
  }

  /**
   * Drops the isolate at once, without refreshing its code caches (a deleted deployment, a closing
   * host); a cold start still under way is freed when it ends, and its calls fail.
   */
  stop(): void {
    this.stopped = true;
    this.drain.stop();
    this.isolate?.dispose();
    this.isolate = null;
    this.heap.watch(null);
  }
}
