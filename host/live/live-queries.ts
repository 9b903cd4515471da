import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { type ReadSet, readSetIntersects } from "../db/index.js";
import type { Deployments } from "../deployments/index.js";

/** Receives a subscription's results. */
export interface Subscriber {
  /** A new result (JSON), pushed only when it differs from the last one. */
  value(valueJson: string): void;
  /** The query failed; it is retried on the next commit of its deployment. */
  error(error: { code: string; message: string }): void;
}

interface Group {
  deployment: string;
  name: string;
  argsJson: string;
  identity: BridgeIdentity | null;
  readSet?: ReadSet;
  valueJson?: string;
  subscribers: Set<Subscriber>;
  running?: Promise<void> | undefined;
  dirty: boolean;
}

/**
 * Live queries: a subscription runs its query, remembers the read set, and
 * after every commit on that deployment only the subscriptions whose read set intersects the
 * commit's write set run again; a result is pushed only when it changed. Identical subscriptions
 * (same query, arguments and caller) share one execution. The clock never invalidates anything.
 */
export class LiveQueries {
  private readonly groups = new Map<string, Group>();
  private readonly byDeployment = new Map<string, Set<Group>>();
  private readonly listening = new Map<string, () => void>();
  private readonly pending = new Set<Promise<void>>();
  /** Query executions so far (tests count re-runs with it). */
  executions = 0;

  constructor(private readonly deployments: Deployments) {}

  /** Subscribes; the first result arrives through `subscriber`. Returns the unsubscribe function. */
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
      group = { deployment, name, argsJson, identity, subscribers: new Set(), dirty: false };
      this.groups.set(key, group);
      let set = this.byDeployment.get(deployment);
      if (!set) {
        set = new Set();
        this.byDeployment.set(deployment, set);
      }
      set.add(group);
      group.subscribers.add(subscriber);
      await this.schedule(group);
    } else {
      group.subscribers.add(subscriber);
      if (group.running) await group.running;
      if (group.valueJson !== undefined) subscriber.value(group.valueJson);
    }
    const joined = group;
    return () => {
      joined.subscribers.delete(subscriber);
      if (joined.subscribers.size === 0) {
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

  private async execute(group: Group): Promise<void> {
    this.executions++;
    try {
      const result = await this.deployments.call(group.deployment, {
        kind: "query",
        name: group.name,
        argsJson: group.argsJson,
        identity: group.identity,
      });
      group.readSet = result.readSet;
      if (result.valueJson !== group.valueJson) {
        group.valueJson = result.valueJson;
        for (const subscriber of group.subscribers) subscriber.value(result.valueJson);
      }
    } catch (error) {
      const wire = isPlatformError(error) ? error.toJSON() : { code: "internal", message: "Internal error." };
      for (const subscriber of group.subscribers) subscriber.error(wire);
    }
  }

  /** Stops listening to commits. */
  close(): void {
    for (const stop of this.listening.values()) stop();
    this.listening.clear();
    this.groups.clear();
    this.byDeployment.clear();
  }
}
