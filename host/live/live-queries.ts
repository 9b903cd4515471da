import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { type ReadSet, readSetIntersects, readSetOfFailure } from "../db/index.js";
import type { DeploymentService } from "../deployments/index.js";

/** A failed run as subscribers see it. */
export interface QueryFailure {
  code: string;
  message: string;
}

/**
 * Receives a subscription's outcomes: the current one once when it joins, then each new one.
 * An error is an outcome like a value: a later success replaces it (even with the old value).
 */
export interface Subscriber {
  /** The query's result (JSON) is now this. */
  value(valueJson: string): void;
  /** The query now fails; it runs again when what it read changes. */
  error(error: QueryFailure): void;
}

/** The latest outcome of a shared subscription: exactly one of the two is set. Never mutated. */
interface Outcome {
  valueJson?: string;
  error?: QueryFailure;
}

interface Group {
  deployment: string;
  name: string;
  argsJson: string;
  identity: BridgeIdentity | null;
  /** What the latest run read; undefined while none ran, or when it failed before reading. */
  readSet?: ReadSet | undefined;
  outcome?: Outcome;
  /** Each subscriber with the outcome it was last given (undefined: nothing yet). */
  subscribers: Map<Subscriber, Outcome | undefined>;
  running?: Promise<void> | undefined;
  dirty: boolean;
}

/**
 * What live queries report, for the host's metrics: an interface of this layer (the metrics
 * implement it); the default ignores it.
 */
export interface LiveObserver {
  /** `count` results (values or errors) were handed to subscribers of `deployment`. */
  pushed(deployment: string, count: number): void;
}

const IGNORE_LIVE: LiveObserver = { pushed() {} };

/**
 * Live queries: a subscription runs its query, remembers the read set, and
 * after every commit on that deployment only the subscriptions whose read set intersects the
 * commit's write set run again. Identical subscriptions (same query, arguments and caller) share
 * one execution. A shared subscription's state is its latest outcome, value or error: a
 * subscriber gets it once when it joins (after the run in progress, if any) and again whenever
 * it changes. A failed run keeps the read set of what it read, so it re-runs when that changes; a
 * run that failed before reading anything re-runs on every commit of its deployment. The clock
 * never invalidates anything.
 */
export class LiveQueries {
  private readonly groups = new Map<string, Group>();
  private readonly byDeployment = new Map<string, Set<Group>>();
  private readonly listening = new Map<string, () => void>();
  private readonly pending = new Set<Promise<void>>();
  /** Query executions so far (tests count re-runs with it). */
  executions = 0;

  constructor(
    private readonly deployments: DeploymentService,
    private readonly observer: LiveObserver = IGNORE_LIVE,
  ) {}

  /** Subscribers by deployment (the host's metrics read it at each scrape). */
  subscriberCounts(): Array<[string, number]> {
    const counts: Array<[string, number]> = [];
    for (const [deployment, groups] of this.byDeployment) {
      let subscribers = 0;
      for (const group of groups) subscribers += group.subscribers.size;
      if (subscribers > 0) counts.push([deployment, subscribers]);
    }
    return counts;
  }

  /** Subscribes; resolves once `subscriber` got the current outcome. Returns the unsubscribe function. */
  async subscribe(
    deployment: string,
    name: string,
    argsJson: string,
    identity: BridgeIdentity | null,
    subscriber: Subscriber,
  ): Promise<() => void> {
    await this.listen(deployment);
    const key = JSON.stringify([
      deployment,
      name,
      argsJson,
      identity?.userId ?? null,
      identity?.kind ?? null,
      identity?.email ?? null,
    ]);
    let group = this.groups.get(key);
    if (!group) {
      group = { deployment, name, argsJson, identity, subscribers: new Map(), dirty: false };
      this.groups.set(key, group);
      let set = this.byDeployment.get(deployment);
      if (!set) {
        set = new Set();
        this.byDeployment.set(deployment, set);
      }
      set.add(group);
    }
    group.subscribers.set(subscriber, undefined);
    // A run in progress (the first, or a re-run) gives the newcomer its outcome when it ends.
    if (group.running) await group.running;
    else if (group.outcome) this.deliver(group);
    else await this.schedule(group);
    const joined = group;
    return () => {
      joined.subscribers.delete(subscriber);
      if (joined.subscribers.size === 0 && this.groups.get(key) === joined) {
        this.groups.delete(key);
        this.byDeployment.get(deployment)?.delete(joined);
      }
    };
  }

  /** Resolves once every re-run started so far has pushed its result (read-your-writes). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private async listen(deployment: string): Promise<void> {
    if (this.listening.has(deployment)) return;
    const database = await this.deployments.db.deployment(deployment);
    if (this.listening.has(deployment)) return;
    this.listening.set(
      deployment,
      database.onCommit((writeSet) => this.invalidate(deployment, writeSet)),
    );
  }

  /** `writeSet` undefined: another host's commit too large to describe; everything re-runs. */
  private invalidate(deployment: string, writeSet: Buffer[] | undefined): void {
    for (const group of this.byDeployment.get(deployment) ?? []) {
      if (!group.readSet || !writeSet || readSetIntersects(group.readSet, writeSet))
        void this.schedule(group);
    }
  }

  /** Runs a group now, or once more after its current run (coalescing bursts of commits). */
  private schedule(group: Group): Promise<void> {
    if (group.running) {
      group.dirty = true;
      return group.running;
    }
    const run = (async () => {
      do {
        group.dirty = false;
        await this.execute(group);
      } while (group.dirty);
    })().finally(() => {
      group.running = undefined;
      this.pending.delete(run);
    });
    group.running = run;
    this.pending.add(run);
    return run;
  }

  /** Runs the query once, records its outcome and read set, and tells whoever has not seen it. */
  private async execute(group: Group): Promise<void> {
    this.executions++;
    const last = group.outcome;
    try {
      const result = await this.deployments.call(group.deployment, {
        kind: "query",
        name: group.name,
        argsJson: group.argsJson,
        identity: group.identity,
      });
      group.readSet = result.readSet;
      if (last?.valueJson !== result.valueJson) group.outcome = { valueJson: result.valueJson };
    } catch (error) {
      group.readSet = readSetOfFailure(error);
      // As over HTTP: a server error's own message stays on the host.
      const failure =
        isPlatformError(error) && error.expose
          ? error.toJSON()
          : { code: "internal", message: "Internal error." };
      if (last?.error?.code !== failure.code || last.error.message !== failure.message)
        group.outcome = { error: failure };
    }
    this.deliver(group);
  }

  /** Gives the group's outcome to every subscriber that was not given it yet. */
  private deliver(group: Group): void {
    const outcome = group.outcome;
    if (!outcome) return;
    let pushed = 0;
    for (const [subscriber, seen] of group.subscribers) {
      if (seen === outcome) continue;
      group.subscribers.set(subscriber, outcome);
      pushed++;
      if (outcome.error) subscriber.error(outcome.error);
      else subscriber.value(outcome.valueJson as string);
    }
    if (pushed > 0) this.observer.pushed(group.deployment, pushed);
  }

  /** Stops listening to commits. */
  close(): void {
    for (const stop of this.listening.values()) stop();
    this.listening.clear();
    this.groups.clear();
    this.byDeployment.clear();
  }
}
