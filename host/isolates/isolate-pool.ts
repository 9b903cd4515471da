import type { CapsuleIsolate } from "./capsule-isolate.js";
import { CodeCache } from "./code-cache.js";
import { CodeCacheFiles } from "./code-cache-files.js";
import { HeapEnforcement } from "./heap-enforcement.js";
import { InlineSentinel, InlineStanding } from "./inline/index.js";
import { InlineOverrunBudget } from "./inline/policy.js";
import { ShareWindow } from "./inline/share-window.js";
import { isolateCpuClock } from "./isolate-cpu-clock.js";
import { IsolateFactory } from "./isolate-factory.js";
import { type ArtifactLoader, IsolateKeeper } from "./isolate-keeper.js";
import { type KnownDeployments, NOTHING_KNOWN } from "./known-deployments.js";
import { IGNORE_ISOLATES, type IsolateObserver } from "./observer.js";
import { evictHeaviestOwnersFirst } from "./owner-eviction.js";
import { DEFAULT_POOL_OPTIONS, type PoolOptions } from "./pool-options.js";
import { loadRuntimeScript } from "./runtime-script.js";
import { FairScheduler, ownerKey } from "./scheduler.js";
import {
  isolateThreadsTracked,
  raiseMainThread,
  sweepIsolateThreads,
  trackIsolateThreadsFromNow,
} from "./thread-priority.js";

/** How often the pool looks for new isolate threads (see thread-priority.ts). */
const THREAD_LOOK_MS = 250;

/**
 * Every deployment's runner on this host, with LRU eviction of idle isolates, and the scheduler
 * that shares the host's execution slots fairly between deployments.
 */
export class IsolatePool {
  private readonly runners = new Map<string, IsolateKeeper>();
  /** Isolate work that outlives its call (evictions' cache refreshes, purges), for {@link close}. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Each deployment's inline standing, shared by its runner and its deploy probes. */
  private readonly standings = new Map<string, InlineStanding>();
  private readonly scheduler: FairScheduler;
  /** Each developer's inline share window, their deployments together (see {@link ownerWindow}). */
  private readonly ownerWindows = new Map<string, ShareWindow>();
  /** The live isolates' heaps together, held to their budget (see {@link HeapEnforcement}). */
  private readonly heaps: HeapEnforcement;
  /** Demotions from inline runs, counted for every deployment of this host together. */
  private readonly overruns: InlineOverrunBudget;
  private readonly sweeper: NodeJS.Timeout;
  private readonly threadLook: NodeJS.Timeout | undefined;
  readonly options: PoolOptions;
  /** Makes this host's isolates, through its code cache (see {@link CodeCache}). */
  readonly factory: IsolateFactory;

  constructor(
    private readonly loadArtifact: ArtifactLoader,
    options: Partial<PoolOptions> = {},
    /** Told of isolates started, evicted and stopped for a limit (the host's metrics). */
    private readonly observer: IsolateObserver = IGNORE_ISOLATES,
    /** What the host knows of its deployments now (its registry's records). */
    private readonly known: KnownDeployments = NOTHING_KNOWN,
  ) {
    this.options = Object.assign({}, DEFAULT_POOL_OPTIONS, options);
    this.scheduler = new FairScheduler(this.options.concurrency, this.options.reservedSlots);
    this.heaps = new HeapEnforcement(
      this.options.maxHeapBytes,
      () => this.runners.values(),
      ownerKeyOf,
      (runner) => {
        this.track(runner.evict());
        this.observer.isolateEvicted("memory");
      },
    );
    this.overruns = new InlineOverrunBudget(this.options.inline);
    const dir = this.options.codeCacheDir;
    const codeCache = new CodeCache(dir === null ? null : new CodeCacheFiles(dir));
    this.factory = new IsolateFactory(
      this.options.limits,
      codeCache,
      this.options.spareIsolate,
      this.options.inline,
    );
    this.sweeper = setInterval(() => this.evictIdle(), Math.min(this.options.idleMs, 30_000));
    this.sweeper.unref();
    // The sentinel's watchdog thread is the host's own: made before isolates' threads are told
    // apart, it keeps the main thread's priority and measures the main thread's CPU in time.
    if (this.options.inline.enabled) InlineSentinel.shared();
    trackIsolateThreadsFromNow(this.options.isolateThreadNice);
    raiseMainThread(this.options.mainThreadNiceRaise);
    if (isolateThreadsTracked()) {
      // Also samples the CPU clock, which sets isolates' threads' priority by how many are busy.
      this.threadLook = setInterval(() => {
        void sweepIsolateThreads().then(() => isolateCpuClock());
      }, THREAD_LOOK_MS);
      this.threadLook.unref();
    }
  }

  /**
   * The runner of a deployment, serving the artifact its newest record known on this host names, or
   * else `artifact` (the record its caller read), switching it when that changed. Never the
   * caller's own when a newer is known: a call that read its record before a redeploy landed
   * switched the deployment back to the old code, and the next call forward again, each time
   * starting an isolate and freeing the one in use. `owner`, the developer that record names (null:
   * unclaimed; the keeper prefers the newest known the same way), is whom its crashes count against.
   */
  runner(deploymentId: string, artifact: string, owner?: string | null): IsolateKeeper {
    artifact = this.known.artifactOf(deploymentId) ?? artifact;
    let runner = this.runners.get(deploymentId);
    if (!runner) {
      runner = new IsolateKeeper(
        deploymentId,
        artifact,
        this.loadArtifact,
        this.factory,
        this.scheduler.lane(deploymentId, () => this.runners.get(deploymentId)?.tenant().owner),
        this.standing(deploymentId),
        () => {
          this.observer.isolateStarted();
          this.enforceCap();
        },
        (limit) => this.observer.limitBreached(deploymentId, limit),
        () => this.known.scopeOf(deploymentId),
        () => this.known.ownerOf(deploymentId),
        this.heaps.budget,
      );
      this.runners.set(deploymentId, runner);
    } else {
      runner.artifact = artifact;
      this.runners.delete(deploymentId);
      this.runners.set(deploymentId, runner);
    }
    if (owner !== undefined) runner.ownedBy(owner);
    return runner;
  }

  private standing(deploymentId: string): InlineStanding {
    let standing = this.standings.get(deploymentId);
    if (!standing) {
      standing = new InlineStanding(this.options.inline, this.overruns, () => this.ownerWindow(deploymentId));
      this.standings.set(deploymentId, standing);
    }
    return standing;
  }

  /**
   * The inline share window of the developer owning `deploymentId` now (none when unclaimed or not
   * known): their deployments' inline CPU together (see InlineStanding.charge).
   */
  private ownerWindow(deploymentId: string): ShareWindow | undefined {
    const owner = this.runners.get(deploymentId)?.tenant().owner;
    if (!owner) return undefined;
    let window = this.ownerWindows.get(owner);
    if (!window) {
      window = new ShareWindow(this.options.inline.windowMs);
      this.ownerWindows.set(owner, window);
    }
    return window;
  }

  /**
   * Loads `code` (content hash `hash`) in a fresh isolate for deployment `deploymentId` of
   * developer `owner` (null: unclaimed), without making it live: the deploy pipeline's probe,
   * which the runner adopts once the deploy succeeds.
   */
  probe(deploymentId: string, owner: string | null, code: string, hash: string): Promise<CapsuleIsolate> {
    return this.factory.create(code, hash, this.standing(deploymentId), {
      tenant: { deployment: deploymentId, owner, deploying: true },
    });
  }

  /** Number of live isolates. */
  liveCount(): number {
    let n = 0;
    for (const runner of this.runners.values()) if (runner.isLive) n++;
    return n;
  }

  /** Calls executing now (each holding an execution slot). */
  busySlots(): number {
    return this.scheduler.busySlots();
  }

  /** Calls waiting for an execution slot, by deployment. */
  waitingCalls(): Array<[string, number]> {
    return this.scheduler.waitingCalls();
  }

  /** Deployments whose calls share the slots of those stopped for a limit lately (the metrics read it). */
  breachedDeployments(): string[] {
    return [...this.runners].filter(([, runner]) => runner.heldToBreachedSlots).map(([id]) => id);
  }

  /**
   * Evicts idle isolates beyond {@link PoolOptions.maxLive}, the least recently used of the owner
   * with most live ones first: one developer cycling through many deployments evicts its own
   * before other tenants'. Runs when an isolate goes live (the only time the count grows) and on
   * each sweep (isolates that were busy then may be idle now), never per call: it walks every runner.
   */
  private enforceCap(): void {
    let live = this.liveCount();
    if (live <= this.options.maxLive) return;
    evictHeaviestOwnersFirst(this.runners.values(), {
      ownerOf: ownerKeyOf,
      weightOf: () => 1,
      over: () => live > this.options.maxLive,
      evict: (runner) => {
        this.track(runner.evict());
        this.observer.isolateEvicted("capacity");
        live--;
      },
    });
  }

  private evictIdle(): void {
    for (const runner of this.runners.values()) runner.forgetGoneHeap();
    this.enforceCap();
    const cutoff = Date.now() - this.options.idleMs;
    for (const runner of this.runners.values())
      if (runner.isLive && !runner.busy && runner.lastUsed < cutoff) {
        this.track(runner.evict());
        this.observer.isolateEvicted("idle");
      }
  }

  /** Forgets a deployment (deleted), its code caches included. */
  remove(deploymentId: string): void {
    this.runners.get(deploymentId)?.stop();
    this.runners.delete(deploymentId);
    this.standings.delete(deploymentId);
    this.track(this.purgeCodeCaches(deploymentId));
  }

  /** Keeps `work` (an eviction's cache refresh, a purge) until it settles, for {@link close}. */
  private track(work: Promise<void>): void {
    const kept = work.catch(() => {}).finally(() => this.inFlight.delete(kept));
    this.inFlight.add(kept);
  }

  /**
   * Forgets the code caches of capsule `artifact` (see {@link CodeCache.forgetCapsule}): the shared
   * one, or, given `scope`, the one of that deployment (id and incarnation).
   */
  forgetCapsuleCache(artifact: string, scope?: string): void {
    this.track(
      loadRuntimeScript().then(({ hash }) => this.factory.codeCache.forgetCapsule(artifact, hash, scope)),
    );
  }

  /** Removes the code caches scoped to a deployment (see {@link CodeCache.purgeDeployment}). */
  purgeCodeCaches(deploymentId: string): Promise<void> {
    return this.factory.codeCache.purgeDeployment(deploymentId);
  }

  /**
   * Stops every isolate; resolves once no isolate work started before is in flight: evictions'
   * cache refreshes, purges, and the factory's warm-up and spare (see IsolateFactory.settled). An
   * isolate still working on its thread when the process exits can crash it.
   */
  async close(): Promise<void> {
    this.scheduler.close();
    clearInterval(this.sweeper);
    clearInterval(this.threadLook);
    this.heaps.close();
    for (const runner of this.runners.values()) runner.stop();
    this.runners.clear();
    this.factory.close();
    await Promise.all(this.inFlight);
    await this.factory.settled();
  }
}

/** Whom a runner's isolate counts against in evictions, as its calls do in the scheduler. */
function ownerKeyOf(runner: IsolateKeeper): string {
  return ownerKey(runner.deploymentId, runner.tenant().owner);
}
