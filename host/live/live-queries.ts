import { type BridgeIdentity, LIMITS } from "../../sdk/protocol/index.js";
import { callerError, isPlatformError } from "../../sdk/values/index.js";
import { emptyReadSet, type ReadSet, readSetOfFailure } from "../db/index.js";
import type { DeploymentService } from "../deployments/index.js";
import {
  type Group,
  groupKey,
  newGroup,
  nextRunOf,
  type Outcome,
  type Subscriber,
  subscribingCallers,
} from "./group.js";
import { type HeldLimits, readSetBytes } from "./held-bytes.js";
import { LiveState } from "./live-state.js";
import { IGNORE_LIVE, type LiveObserver, OutcomeDelivery } from "./outcome-delivery.js";
import { liveStateRefusals, outcomeBytes, readSetOfRefusal, sameOutcome } from "./outcomes.js";
import type { ReadSetIndex } from "./read-set-index.js";
import type { RerunQueue } from "./rerun-queue.js";
import { RunSchedule } from "./run-schedule.js";
import { Subscriptions } from "./subscriptions.js";
import { WritesDuringRuns } from "./writes-during-runs.js";

/**
 * Live queries: a subscription runs its query and remembers its read set; after a commit, only
 * the subscriptions whose read set the write set touches run again (found through a
 * {@link ReadSetIndex}, taking turns in the deployment's {@link RerunQueue}). Identical
 * subscriptions share one execution, and a subscriber is sent each outcome, value or error, that
 * differs from the last. When refused or failed runs re-run, and what a deployment's
 * subscriptions may hold: docs/architecture.md, "Live queries".
 */
export class LiveQueries {
  /** Who subscribes to what (subscriptions.ts). */
  private readonly subscriptions = new Subscriptions();
  /** When groups run (run-schedule.ts). */
  private readonly runs: RunSchedule;
  /** What was committed while groups ran (writes-during-runs.ts). */
  private readonly writesDuringRuns = new WritesDuringRuns();
  /**
   * The database each deployment's commits are heard from, and how to stop hearing them. A
   * deployment deleted and created again under its id has another database.
   */
  private readonly listening = new Map<string, { database: object; stop: () => void }>();
  private readonly state: LiveState;
  /** The refusal for passing each limit, and the most any of them holds. */
  private readonly refusals: Record<keyof HeldLimits, Outcome>;
  private readonly refusalBytes: number;
  private readonly delivery: OutcomeDelivery;
  private readonly stopWatchingDeploys: () => void;
  private readonly stopWatchingGone: () => void;
  /** Query executions so far (tests count re-runs with it). */
  executions = 0;

  constructor(
    private readonly deployments: DeploymentService,
    observer: LiveObserver = IGNORE_LIVE,
    /** What subscriptions may hold, by deployment, caller and host (tests use small figures). */
    limits: Partial<HeldLimits> = {},
  ) {
    const held: HeldLimits = {
      deployment: limits.deployment ?? LIMITS.liveStateBytes,
      caller: limits.caller ?? LIMITS.liveStateBytesPerClient,
      host: limits.host ?? LIMITS.liveStateHostBytes,
    };
    this.runs = new RunSchedule((group) => this.execute(group));
    this.state = new LiveState(
      held,
      (group) => void this.runs.schedule(group).catch(() => {}),
      subscribingCallers,
    );
    this.delivery = new OutcomeDelivery(observer);
    this.refusals = liveStateRefusals(held);
    this.refusalBytes = Math.max(...Object.values(this.refusals).map(outcomeBytes));
    this.stopWatchingDeploys = deployments.onChanged((id) => this.rerunAll(id));
    this.stopWatchingGone = deployments.onGone((id) => this.forget(id));
  }

  /** Subscribers by deployment (the host's metrics read it at each scrape). */
  subscriberCounts(): Array<[string, number]> {
    return this.subscriptions.counts();
  }

  /**
   * Subscribes; resolves once `subscriber` got the current outcome. Returns the unsubscribe
   * function, which {@link leave} is too: leave at once, a subscribe still waiting for its outcome
   * included (a query that takes seconds must not keep what its subscribers left).
   */
  async subscribe(
    deployment: string,
    name: string,
    argsJson: string,
    identity: BridgeIdentity | null,
    subscriber: Subscriber,
    /** The incarnation `identity` was checked for (a socket's): its runs are refused on another. */
    incarnation?: string | null,
  ): Promise<() => void> {
    const leave = () => this.leave(subscriber);
    await this.listen(deployment);
    if (this.subscriptions.hasLeft(subscriber)) return leave;
    const key = groupKey(deployment, name, argsJson, identity, incarnation);
    let group = this.subscriptions.get(key);
    if (!group) {
      group = newGroup(deployment, name, argsJson, identity, subscriber.caller ?? "", incarnation);
      this.subscriptions.add(key, group);
    }
    this.subscriptions.join(subscriber, group, key);
    // A run under way (the first, or a re-run) or due hands the newcomer its outcome. Only that run
    // is waited for, not the re-runs commits keep adding behind it: under a steady stream of
    // commits a busy query's chain of runs never ends, and an unsubscribe waits for this.
    const run =
      group.running ??
      (group.outcome && group.roomNeeded === undefined && group.retryTimer === undefined
        ? undefined
        : this.runs.schedule(group));
    if (run) await Promise.race([run, nextRunOf(group, true)]);
    if (group.subscribers.has(subscriber)) this.delivery.deliverTo(group, subscriber);
    return leave;
  }

  /**
   * Takes `subscriber` out of its group now, whether or not its subscribe has resolved; a group
   * left empty is dropped (a run under way finds it gone and keeps nothing). Found by review:
   * leaving was possible only once the first outcome came, so subscribing to a query that hangs
   * and unsubscribing at once, over and over, kept every subscription, after the socket's limits
   * on arguments had let them go.
   */
  leave(subscriber: Subscriber): void {
    const group = this.subscriptions.leave(subscriber);
    if (!group) return;
    if (group.subscribers.size === 0) {
      clearTimeout(group.retryTimer);
      this.state.release(group);
    } else this.state.subscriberLeft(group, subscriber.caller ?? "");
  }

  /**
   * Resolves once no run of any deployment is due, re-runs asked for meanwhile included (tests
   * use it; under a steady stream of commits it may never resolve: see {@link settledFor}).
   */
  settled(): Promise<void> {
    return this.runs.settled();
  }

  /**
   * Resolves once every subscription of `deployment` that a commit made before this call touched
   * has pushed an outcome read after it (read-your-writes for a mutation's answer): a group
   * waiting for its turn runs once, one executing now runs once more (the commit made it dirty).
   * Runs asked for by later commits are not waited for, so neither a steady stream of commits nor
   * another tenant's slow queries hold the answer back; given an `owner` (the socket the mutation
   * came on), only groups it subscribes to are, so neither do other users' subscriptions.
   */
  settledFor(deployment: string, owner?: object): Promise<void> {
    const groups =
      owner === undefined ? this.subscriptions.ofDeployment(deployment) : this.subscriptions.ofOwner(owner);
    const waits: Array<Promise<void>> = [];
    for (const group of groups ?? []) {
      if (group.running && group.deployment === deployment) waits.push(nextRunOf(group));
    }
    return Promise.all(waits).then(() => {});
  }

  private async listen(deployment: string): Promise<void> {
    const database = await this.deployments.db.deployment(deployment);
    if (this.listening.get(deployment)?.database === database) return;
    this.stopListening(deployment);
    const stop = database.onCommit((writeSet) => this.invalidate(deployment, writeSet));
    this.listening.set(deployment, { database, stop });
  }

  private stopListening(deployment: string): void {
    this.listening.get(deployment)?.stop();
    this.listening.delete(deployment);
  }

  /**
   * Forgets deleted deployment `deployment`: its commits are no longer heard and its subscriptions'
   * groups are dropped (their sockets are being closed), so that a deployment created again under
   * the id starts afresh instead of joining results of the old one.
   */
  private forget(deployment: string): void {
    this.stopListening(deployment);
    const groups = [...(this.subscriptions.forget(deployment) ?? [])];
    for (const group of groups) clearTimeout(group.retryTimer);
    this.state.forget(deployment, groups);
    this.runs.forget(deployment);
    this.writesDuringRuns.forget(deployment);
  }

  /** Re-runs every subscription of `deployment` (its code or settings changed). */
  private rerunAll(deployment: string): void {
    for (const group of this.subscriptions.ofDeployment(deployment) ?? [])
      void this.runs.schedule(group).catch(() => {});
  }

  /** `writeSet` undefined: another host's commit too large to describe; everything re-runs. */
  private invalidate(deployment: string, writeSet: Buffer[] | undefined): void {
    this.writesDuringRuns.written(deployment, writeSet);
    for (const group of this.subscriptions.touched(deployment, writeSet))
      void this.runs.schedule(group).catch(() => {});
    this.state.written(deployment);
  }

  /**
   * Runs the query once, keeps its outcome and what it read within {@link LIMITS.liveStateBytes}
   * and the limits beside it (beyond them, subscribers get `limit_exceeded`, and the group runs
   * again, oldest first, as room frees), and tells whoever has not seen the outcome.
   */
  private async execute(group: Group): Promise<void> {
    this.executions++;
    this.writesDuringRuns.begin(group);
    try {
      await this.executeOnce(group);
    } finally {
      this.writesDuringRuns.end(group, undefined, false);
    }
  }

  /** One execution of `group` (see {@link execute}). */
  private async executeOnce(group: Group): Promise<void> {
    let outcome: Outcome;
    let readSet: ReadSet | undefined;
    let retryAfterSeconds: number | undefined;
    try {
      const result = await this.deployments.call(group.deployment, {
        kind: "query",
        name: group.name,
        argsJson: group.argsJson,
        identity: group.identity,
        incarnation: group.incarnation,
      });
      outcome = { valueJson: result.valueJson };
      readSet = result.readSet;
    } catch (error) {
      // As over HTTP: a server error's own message stays on the host.
      outcome = { error: callerError(error) };
      readSet = readSetOfFailure(error) ?? readSetOfRefusal(error);
      retryAfterSeconds = isPlatformError(error) ? error.retryAfterSeconds : undefined;
    }
    // Unsubscribed meanwhile: nothing to keep, nobody to tell.
    if (!this.subscriptions.has(group)) return;
    this.retryLater(group, retryAfterSeconds);
    const passed = this.state.keep(group, outcomeBytes(outcome) + readSetBytes(readSet), this.refusalBytes);
    if (passed) {
      outcome = this.refusals[passed];
      readSet = emptyReadSet();
    }
    const changed = this.subscriptions.read(group, readSet);
    // A commit made while it ran, to what this run read but the last one did not: once more.
    if (this.writesDuringRuns.end(group, readSet, changed)) group.dirty = true;
    if (!sameOutcome(group.outcome, outcome)) group.outcome = outcome;
    // Within the run: the next run waits for it, and so does a mutation's answer (settledFor).
    await this.delivery.deliver(group, () => this.subscriptions.has(group));
  }

  /**
   * A refusal of the moment (the deployment busy, paused or quarantined: an error with
   * `Retry-After`) is not the query's lasting outcome: the group runs again once that time has
   * passed, and a subscriber joining meanwhile gets a run of its own. Before, it stayed until the
   * next commit, and was handed without a run to everyone who subscribed later.
   */
  private retryLater(group: Group, seconds: number | undefined): void {
    clearTimeout(group.retryTimer);
    group.retryTimer = undefined;
    if (seconds === undefined) return;
    // Spread over a second: a paused deployment's subscriptions do not all come back at once.
    const wait = seconds * 1000 + Math.random() * 1000;
    group.retryTimer = setTimeout(() => {
      group.retryTimer = undefined;
      if (this.subscriptions.has(group)) void this.runs.schedule(group).catch(() => {});
    }, wait).unref();
  }

  /** Stops listening to commits. */
  close(): void {
    this.stopWatchingDeploys();
    this.stopWatchingGone();
    for (const { stop } of this.listening.values()) stop();
    this.listening.clear();
    for (const group of this.subscriptions.all()) clearTimeout(group.retryTimer);
    this.subscriptions.clear();
    this.runs.clear();
    this.state.clear();
  }
}
