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
 *
 * Each rule holds per owner too (the developer account a deployment belongs to; an unclaimed
 * deployment is its own owner): a developer's deployments together run at most
 * {@link LIMITS.ownerCallsInFlight} calls, and take the reserve only while none of them runs
 * anything. One developer's hundred deployments, each with one call that hangs, took every slot.
 *
 * Deployments whose isolate was stopped for a limit lately also share
 * {@link LIMITS.breachedCallsRunning} slots between them (see {@link DeploymentLane.markBreached}):
 * their threads are the ones that spin and allocate, and the more of them run, the longer a thread
 * preempted inside the kernel's memory-map lock keeps the host's main thread waiting for it.
 */
export class FairScheduler {
  private free: number;
  private breachedFree: number;
  /** Lanes with waiting calls, in the order they get their next turn. */
  private readonly ready: DeploymentLane[] = [];
  /** Slots each owner's calls hold, and breached deployments' slots (owners holding none are absent). */
  private readonly owners = new Map<string, { running: number; breached: number }>();
  /** Set when the host closes: nothing starts any more. */
  closed = false;

  constructor(
    private readonly slots: number,
    /** Slots kept for deployments with nothing running. */
    private readonly reserved: number,
    /** Slots shared by the deployments stopped for a limit lately. */
    breachedSlots: number = LIMITS.breachedCallsRunning,
  ) {
    this.free = slots;
    this.breachedFree = breachedSlots;
  }

  /** Slots taken now (the host's metrics read it). */
  busySlots(): number {
    return this.slots - this.free;
  }

  /** The waiting calls of each deployment with some waiting (the host's metrics read it). */
  waitingCalls(): Array<[string, number]> {
    return this.ready.map((lane) => [lane.deploymentId, lane.waitingCount]);
  }

  /**
   * A lane for one deployment's calls; `ownerOf` says whom it belongs to now (see
   * {@link OwnerKey}), asked as each call takes its slot.
   */
  lane(deploymentId: string, ownerOf: () => string | null | undefined = () => undefined): DeploymentLane {
    return new DeploymentLane(this, deploymentId, () => ownerKey(deploymentId, ownerOf()));
  }

  /**
   * Closes the scheduler (the host is stopping): waiting calls are refused instead of starting once
   * the running ones are stopped, when the database they would read is closing too.
   */
  close(): void {
    this.closed = true;
    for (const lane of this.ready.splice(0)) lane.refuseWaiting();
  }

  /**
   * Takes a slot for a lane of `owner` when the rules allow it now, and for a breached lane one of
   * the breached deployments' slots too (an owner holds one of those at most).
   */
  tryTake(owner: OwnerKey, breached: boolean): boolean {
    const held = this.owners.get(owner);
    const running = held?.running ?? 0;
    if (this.closed || this.free <= (running === 0 ? 0 : this.reserved)) return false;
    if (running >= LIMITS.ownerCallsInFlight) return false;
    if (breached && (this.breachedFree === 0 || (held !== undefined && held.breached > 0))) return false;
    this.free--;
    if (breached) this.breachedFree--;
    if (held === undefined) this.owners.set(owner, { running: 1, breached: breached ? 1 : 0 });
    else {
      held.running++;
      if (breached) held.breached++;
    }
    return true;
  }

  /** Puts a lane whose first call started to wait in line for a turn. */
  enqueue(lane: DeploymentLane): void {
    this.ready.push(lane);
  }

  /**
   * A slot came back (with a breached deployments' slot when `breached`): walks the waiting lanes
   * once, in turn, giving each that may take a slot one call's start; a lane that still waits goes
   * to the back of the line.
   */
  release(owner: OwnerKey, breached: boolean): void {
    this.free++;
    if (breached) this.breachedFree++;
    const held = this.owners.get(owner);
    if (held !== undefined) {
      held.running--;
      if (breached) held.breached--;
      if (held.running <= 0) this.owners.delete(owner);
    }
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
  /** Until when (ms since epoch) this deployment's calls count as breached. */
  private breachedUntil = 0;
  /** Waiting calls; `start` is told the slot it got (see {@link Slot}). */
  private readonly waiting: Array<{ start: (slot: Slot) => void; refuse: (error: Error) => void }> = [];

  constructor(
    private readonly scheduler: FairScheduler,
    readonly deploymentId: string,
    /** Whom the deployment's calls count against now. */
    private readonly owner: () => OwnerKey,
  ) {}

  /** Calls waiting for a slot. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** Runs `work` once this deployment has an execution slot; calls start in the order they came. */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.scheduler.closed) return Promise.reject(stopping());
    const taken = this.waiting.length === 0 ? this.take() : null;
    if (taken !== null) return this.holding(work, taken);
    if (this.waiting.length >= LIMITS.deploymentQueuedCalls) return Promise.reject(this.busy());
    return new Promise<Slot>((start, refuse) => {
      if (this.waiting.push({ start, refuse }) === 1) this.scheduler.enqueue(this);
    }).then((slot) => this.holding(work, slot));
  }

  /**
   * The deployment's isolate was stopped for its CPU or memory limit: for the next
   * {@link LIMITS.breachPauseMaxMs}, each of its calls also needs one of the slots the breached
   * deployments share, so twenty tenants stopped for spinning or allocating run two threads, not
   * twenty. Meanwhile it competes with every other such deployment for those slots, each of which a
   * call may hold up to the wall-clock limit (the keeper spares deployments with a history of
   * answers, see {@link LIMITS.breachForgivenCalls}).
   */
  markBreached(): void {
    this.breachedUntil = Date.now() + LIMITS.breachPauseMaxMs;
  }

  /** True while this deployment's calls need one of the breached deployments' slots. */
  get breached(): boolean {
    return Date.now() < this.breachedUntil;
  }

  /** Refuses every waiting call (the host is stopping). */
  refuseWaiting(): void {
    for (const call of this.waiting.splice(0)) call.refuse(stopping());
  }

  /** Takes a slot for one call when the rules allow it now: `null` when not. */
  private take(): Slot | null {
    if (this.inFlight >= LIMITS.deploymentCallsInFlight) return null;
    const slot = { owner: this.owner(), breached: this.breached };
    if (!this.scheduler.tryTake(slot.owner, slot.breached)) return null;
    this.inFlight++;
    return slot;
  }

  /**
   * The scheduler's turn: starts the first waiting call when a slot may be taken. True when calls
   * still wait (the lane stays in line).
   */
  startNext(): boolean {
    const taken = this.take();
    if (taken !== null) this.waiting.shift()?.start(taken);
    return this.waiting.length > 0;
  }

  /** Runs `work` in a slot already taken, and gives the slot back when it settles. */
  private holding<T>(work: () => Promise<T>, slot: Slot): Promise<T> {
    let result: Promise<T>;
    try {
      result = work();
    } catch (error) {
      this.release(slot);
      return Promise.reject(error);
    }
    return result.then(
      (value) => {
        this.release(slot);
        return value;
      },
      (error: unknown) => {
        this.release(slot);
        throw error;
      },
    );
  }

  private release(slot: Slot): void {
    this.inFlight--;
    this.scheduler.release(slot.owner, slot.breached);
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

/**
 * Whom a call's slot counts against: `owner:<developer>`, or for an unclaimed deployment
 * `deployment:<id>` (it is its own owner).
 */
export type OwnerKey = string;

export function ownerKey(deploymentId: string, owner: string | null | undefined): OwnerKey {
  return owner ? `owner:${owner}` : `deployment:${deploymentId}`;
}

/**
 * A slot a call holds: whom it was counted against as it was taken, and whether it includes a
 * breached deployments' one; both are given back as taken, whatever changed meanwhile (a claim,
 * the mark's expiry).
 */
interface Slot {
  owner: OwnerKey;
  breached: boolean;
}

function stopping(): PlatformError {
  return new PlatformError("unavailable", "The host is shutting down. Retry in 1 s.", {
    retryAfterSeconds: 1,
  });
}
