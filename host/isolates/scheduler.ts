import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/**
 * The host's execution slots, shared fairly between deployments (docs/security.md "Scheduling").
 * Each deployment has a {@link DeploymentLane}: its calls wait there, in its own bounded queue, and
 * hold nothing shared until a slot is theirs. A slot that comes back goes to the lanes with waiting
 * calls in turn (round-robin), one call each, so a deployment with hundreds of waiting calls gets no
 * more of the host than one with a single call. A deployment already running calls takes another
 * slot only while more than `reserved` slots are free; the reserve goes one slot at a time to
 * deployments with nothing running, so tenants whose calls hang or spin cannot fill the host: a
 * deployment arriving with one call finds a slot unless that many other deployments are busy at once.
 */
export class FairScheduler {
  private free: number;
  /** Lanes with waiting calls, in the order they get their next turn. */
  private readonly ready: DeploymentLane[] = [];
  /** Set when the host closes: nothing starts any more. */
  closed = false;

  constructor(
    private readonly slots: number,
    /** Slots kept for deployments with nothing running. */
    private readonly reserved: number,
  ) {
    this.free = slots;
  }

  /** Slots taken now (the host's metrics read it). */
  busySlots(): number {
    return this.slots - this.free;
  }

  /** The waiting calls of each deployment with some waiting (the host's metrics read it). */
  waitingCalls(): Array<[string, number]> {
    return this.ready.map((lane) => [lane.deploymentId, lane.waitingCount]);
  }

  /** A lane for one deployment's calls. */
  lane(deploymentId: string): DeploymentLane {
    return new DeploymentLane(this, deploymentId);
  }

  /**
   * Closes the scheduler (the host is stopping): waiting calls are refused instead of starting once
   * the running ones are stopped, when the database they would read is closing too.
   */
  close(): void {
    this.closed = true;
    for (const lane of this.ready.splice(0)) lane.refuseWaiting();
  }

  /** Takes a slot for a lane with `inFlight` calls running when the rules allow it now. */
  tryTake(inFlight: number): boolean {
    if (this.closed || this.free <= (inFlight === 0 ? 0 : this.reserved)) return false;
    this.free--;
    return true;
  }

  /** Puts a lane whose first call started to wait in line for a turn. */
  enqueue(lane: DeploymentLane): void {
    this.ready.push(lane);
  }

  /**
   * A slot came back: walks the waiting lanes once, in turn, giving each that may take a slot one
   * call's start; a lane that still waits goes to the back of the line.
   */
  release(): void {
    this.free++;
    for (let turns = this.ready.length; turns > 0 && this.free > 0; turns--) {
      const lane = this.ready.shift() as DeploymentLane;
      if (lane.startNext()) this.ready.push(lane);
    }
  }
}

/**
 * One deployment's calls: at most {@link LIMITS.deploymentCallsInFlight} running (each holding a
 * host slot) and at most {@link LIMITS.deploymentQueuedCalls} waiting; beyond that a call is
 * refused at once with `503 unavailable` and `Retry-After`. When the deployment is idle and a slot
 * is free, a call starts at once, without an extra turn of the event loop.
 */
export class DeploymentLane {
  private inFlight = 0;
  private readonly waiting: Array<{ start: () => void; refuse: (error: Error) => void }> = [];

  constructor(
    private readonly scheduler: FairScheduler,
    readonly deploymentId: string,
  ) {}

  /** Calls waiting for a slot. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** Runs `work` once this deployment has an execution slot; calls start in the order they came. */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.scheduler.closed) return Promise.reject(stopping());
    if (this.waiting.length === 0 && this.mayTake()) {
      this.inFlight++;
      return this.holding(work);
    }
    if (this.waiting.length >= LIMITS.deploymentQueuedCalls) return Promise.reject(this.busy());
    return new Promise<void>((start, refuse) => {
      if (this.waiting.push({ start, refuse }) === 1) this.scheduler.enqueue(this);
    }).then(() => this.holding(work));
  }

  /** Refuses every waiting call (the host is stopping). */
  refuseWaiting(): void {
    for (const call of this.waiting.splice(0)) call.refuse(stopping());
  }

  private mayTake(): boolean {
    return this.inFlight < LIMITS.deploymentCallsInFlight && this.scheduler.tryTake(this.inFlight);
  }

  /**
   * The scheduler's turn: starts the first waiting call when a slot may be taken. True when calls
   * still wait (the lane stays in line).
   */
  startNext(): boolean {
    if (this.mayTake()) {
      this.inFlight++;
      this.waiting.shift()?.start();
    }
    return this.waiting.length > 0;
  }

  /** Runs `work` in a slot already taken, and gives the slot back when it settles. */
  private holding<T>(work: () => Promise<T>): Promise<T> {
    let result: Promise<T>;
    try {
      result = work();
    } catch (error) {
      this.release();
      return Promise.reject(error);
    }
    return result.then(
      (value) => {
        this.release();
        return value;
      },
      (error: unknown) => {
        this.release();
        throw error;
      },
    );
  }

  private release(): void {
    this.inFlight--;
    this.scheduler.release();
  }

  private busy(): PlatformError {
    const seconds = LIMITS.busyRetryAfterSeconds;
    return new PlatformError(
      "unavailable",
      `Deployment ${this.deploymentId} is busy: ${LIMITS.deploymentQueuedCalls} calls are already waiting for it. Retry in ${seconds} s.`,
      { retryAfterSeconds: seconds },
    );
  }
}

function stopping(): PlatformError {
  return new PlatformError("unavailable", "The host is shutting down. Retry in 1 s.", {
    retryAfterSeconds: 1,
  });
}
