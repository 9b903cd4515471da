import type { ReadSet } from "../db/index.js";
import type { Group, Subscriber } from "./group.js";
import { ReadSetIndex } from "./read-set-index.js";

/**
 * Who subscribes to what, for `LiveQueries` (live-queries.ts): each shared subscription's
 * group by its key and by deployment, with what its last run read (a {@link ReadSetIndex} per
 * deployment, which finds the groups a commit touches); the group each subscriber is in from
 * joining until it leaves, the subscribers that left, and each owner's (a socket's) groups with
 * how many of its subscribers each has. When the groups run, and what they hold, is the caller's.
 */
export class Subscriptions {
  private readonly groups = new Map<string, Group>();
  private readonly byDeployment = new Map<string, Set<Group>>();
  private readonly readSets = new Map<string, ReadSetIndex<Group>>();
  /** The group each subscriber is in, with its key, from joining until it leaves. */
  private readonly memberships = new WeakMap<Subscriber, { group: Group; key: string }>();
  /** Subscribers that left (or never joined): a subscribe still under way for one of them ends without it. */
  private readonly gone = new WeakSet<Subscriber>();
  /** Each owner's groups (a socket's), with how many of its subscribers each has: what `settledFor` waits for. */
  private readonly byOwner = new WeakMap<object, Map<Group, number>>();

  /** Subscribers by deployment. */
  counts(): Array<[string, number]> {
    const counts: Array<[string, number]> = [];
    for (const [deployment, groups] of this.byDeployment) {
      let subscribers = 0;
      for (const group of groups) subscribers += group.subscribers.size;
      if (subscribers > 0) counts.push([deployment, subscribers]);
    }
    return counts;
  }

  /** The group under `key`, if any. */
  get(key: string): Group | undefined {
    return this.groups.get(key);
  }

  /** Adds the new `group` under `key`. */
  add(key: string, group: Group): void {
    this.groups.set(key, group);
    let set = this.byDeployment.get(group.deployment);
    if (!set) {
      set = new Set();
      this.byDeployment.set(group.deployment, set);
    }
    set.add(group);
    // No read set yet: every commit touches it until its first run has read.
    this.readSetsOf(group.deployment).set(group, undefined);
  }

  /** `group`'s last run read `readSet` (undefined: not known, so every commit touches it). */
  read(group: Group, readSet: ReadSet | undefined): boolean {
    return this.readSetsOf(group.deployment).set(group, readSet);
  }

  /** The groups of `deployment` whose read sets `writeSet` touches (undefined: all of them). */
  touched(deployment: string, writeSet: Buffer[] | undefined): Iterable<Group> {
    return this.readSets.get(deployment)?.touched(writeSet) ?? [];
  }

  /** Whether `subscriber` left (or never joined). */
  hasLeft(subscriber: Subscriber): boolean {
    return this.gone.has(subscriber);
  }

  /** Puts `subscriber` in `group`, which is under `key`. */
  join(subscriber: Subscriber, group: Group, key: string): void {
    group.subscribers.set(subscriber, undefined);
    this.memberships.set(subscriber, { group, key });
    this.countOwner(subscriber.owner, group, 1);
  }

  /**
   * Takes `subscriber` out of its group, and marks it gone. Answers the group while it is still
   * the one its key names; left empty, it is dropped here, and what it holds is the caller's to
   * release.
   */
  leave(subscriber: Subscriber): Group | undefined {
    this.gone.add(subscriber);
    const membership = this.memberships.get(subscriber);
    if (!membership) return undefined;
    this.memberships.delete(subscriber);
    const { group, key } = membership;
    if (group.subscribers.delete(subscriber)) this.countOwner(subscriber.owner, group, -1);
    if (this.groups.get(key) !== group) return undefined;
    if (group.subscribers.size === 0) {
      this.groups.delete(key);
      this.byDeployment.get(group.deployment)?.delete(group);
      this.readSets.get(group.deployment)?.delete(group);
    }
    return group;
  }

  /** Whether `group` is still subscribed to (not dropped meanwhile). */
  has(group: Group): boolean {
    return this.byDeployment.get(group.deployment)?.has(group) === true;
  }

  /** The groups of `deployment`. */
  ofDeployment(deployment: string): Iterable<Group> | undefined {
    return this.byDeployment.get(deployment);
  }

  /** The groups `owner` has subscribers in. */
  ofOwner(owner: object): Iterable<Group> | undefined {
    return this.byOwner.get(owner)?.keys();
  }

  /** Drops the groups of deleted deployment `deployment`; answers them. */
  forget(deployment: string): Iterable<Group> | undefined {
    for (const [key, group] of this.groups) if (group.deployment === deployment) this.groups.delete(key);
    const groups = this.byDeployment.get(deployment);
    this.byDeployment.delete(deployment);
    this.readSets.delete(deployment);
    return groups;
  }

  /** Every group. */
  all(): Iterable<Group> {
    return this.groups.values();
  }

  clear(): void {
    this.groups.clear();
    this.byDeployment.clear();
    this.readSets.clear();
  }

  private readSetsOf(deployment: string): ReadSetIndex<Group> {
    let index = this.readSets.get(deployment);
    if (!index) {
      index = new ReadSetIndex();
      this.readSets.set(deployment, index);
    }
    return index;
  }

  /** Counts `owner`'s subscribers of `group` up or down (see {@link byOwner}). */
  private countOwner(owner: object | undefined, group: Group, step: 1 | -1): void {
    if (owner === undefined) return;
    let groups = this.byOwner.get(owner);
    if (!groups) {
      groups = new Map();
      this.byOwner.set(owner, groups);
    }
    const count = (groups.get(group) ?? 0) + step;
    if (count > 0) groups.set(group, count);
    else groups.delete(group);
  }
}
