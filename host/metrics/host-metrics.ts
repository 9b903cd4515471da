import { Counter, collectDefaultMetrics, Registry } from "prom-client";
import type { CallUsage } from "../../sdk/protocol/index.js";
import { CallMetrics } from "./call-metrics.js";
import { type MetricSources, watchSources } from "./sampled-gauges.js";

/** How long after a deployment's deletion its late pushes and stops are dropped (ms): longer than any call runs. */
const FORGOTTEN_MS = 60_000;

/** Why a live isolate was dropped: idle too long, or the host's cap on live isolates. */
export type EvictionReason = "idle" | "capacity" | "memory";

/** The limit an isolate was stopped for. */
export type BreachedLimit = "cpu" | "memory";

/**
 * One host's metrics, in a registry of its own (never prom-client's global one: two hosts in one
 * process, as in the tests, must not add up). Events are counted as they happen through the
 * methods below, which the call path, the isolate pool and live queries call through their own
 * small observer interfaces; levels (live isolates, queues, subscriptions, storage, connection
 * pools) are read from {@link MetricSources} when a scrape asks, so they cost nothing between
 * scrapes. `GET /metrics` serves {@link text}.
 */
export class HostMetrics {
  readonly registry = new Registry();
  private readonly calls: CallMetrics;
  private readonly isolatesStarted: Counter;
  private readonly isolatesEvicted: Counter<"reason">;
  private readonly limitBreaches: Counter<"deployment" | "limit">;
  private readonly livePushes: Counter<"deployment">;
  private readonly connectionsDropped: Counter;
  private readonly pushesBy = new Map<string, Counter.Internal>();
  /** Deployments deleted within {@link FORGOTTEN_MS}, oldest first, by when. */
  private readonly forgottenAt = new Map<string, number>();

  constructor(
    options: {
      /** Times the supervisor restarted the server process before this one (see cli/supervisor.ts). */
      serverRestarts?: number | undefined;
      /** Node's process metrics (CPU, memory, event loop, GC): once per process, so off in tests. */
      processMetrics?: boolean | undefined;
    } = {},
  ) {
    const registers = [this.registry];
    this.calls = new CallMetrics(this.registry);
    this.isolatesStarted = new Counter({
      name: "platform_isolates_started_total",
      help: "Isolates that went live (cold starts, restarts after a limit stop, adopted deploy probes).",
      registers,
    });
    this.isolatesEvicted = new Counter({
      name: "platform_isolates_evicted_total",
      help: "Live isolates dropped: idle too long, or beyond the host's cap on live isolates.",
      labelNames: ["reason"],
      registers,
    });
    for (const reason of ["idle", "capacity", "memory"] satisfies EvictionReason[])
      this.isolatesEvicted.labels(reason).inc(0);
    this.limitBreaches = new Counter({
      name: "platform_isolate_limit_breaches_total",
      help: "Isolates stopped for their CPU or memory limit (every call in flight on one fails; counted once).",
      labelNames: ["deployment", "limit"],
      registers,
    });
    this.livePushes = new Counter({
      name: "platform_live_pushes_total",
      help: "Live query results (values or errors) handed to subscribers.",
      labelNames: ["deployment"],
      registers,
    });
    this.connectionsDropped = new Counter({
      name: "platform_connections_dropped_total",
      help: "Client connections closed as soon as they were accepted: the host held as many as it may (host/http/connection-cap.ts).",
      registers,
    });
    new Counter({
      name: "platform_server_restarts_total",
      help: "Times the supervisor restarted the server process since it started (this process reports the count it was told).",
      registers,
    }).inc(options.serverRestarts ?? 0);
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Starts reading levels from `sources` at each scrape (the host calls it once its parts exist). */
  watch(sources: MetricSources): void {
    watchSources(this.registry, sources);
  }

  /** A call ran and settled (see {@link CallMetrics.settled}). */
  settled(deployment: string, kind: string, status: string, seconds: number, usage: CallUsage): void {
    this.calls.settled(deployment, kind, status, seconds, usage);
  }

  /** A call was refused before it ran (see {@link CallMetrics.refused}). */
  refused(deployment: string, kind: string, status: string): void {
    this.calls.refused(deployment, kind, status);
  }

  /** An isolate went live. */
  isolateStarted(): void {
    this.isolatesStarted.inc();
  }

  /** A live isolate was dropped for `reason`. */
  isolateEvicted(reason: EvictionReason): void {
    this.isolatesEvicted.labels(reason).inc();
  }

  /** Deployment `deployment`'s isolate was stopped for `limit`. */
  limitBreached(deployment: string, limit: BreachedLimit): void {
    if (!this.forgottenLately(deployment)) this.limitBreaches.labels(deployment, limit).inc();
  }

  /** A client connection was closed as it arrived: the host held as many as it may. */
  connectionDropped(): void {
    this.connectionsDropped.inc();
  }

  /** `count` live query results were handed to subscribers of `deployment`. */
  pushed(deployment: string, count: number): void {
    if (this.forgottenLately(deployment)) return;
    let child = this.pushesBy.get(deployment);
    if (!child) {
      child = this.livePushes.labels(deployment);
      this.pushesBy.set(deployment, child);
    }
    child.inc(count);
  }

  /**
   * Drops a deleted deployment's event series. Its pushes and stops reported within
   * {@link FORGOTTEN_MS} after are dropped too (work begun before the deletion made its series
   * anew, for good); a deployment created again under the id in that time has them uncounted.
   * Its calls are dropped by when they began (see CallExecution's `settled`).
   */
  forget(deployment: string): void {
    const now = Date.now();
    for (const [id, at] of this.forgottenAt) {
      if (now - at < FORGOTTEN_MS) break;
      this.forgottenAt.delete(id);
    }
    this.forgottenAt.delete(deployment);
    this.forgottenAt.set(deployment, now);
    this.calls.forget(deployment);
    this.pushesBy.delete(deployment);
    this.livePushes.remove(deployment);
    for (const limit of ["cpu", "memory"] satisfies BreachedLimit[])
      this.limitBreaches.remove(deployment, limit);
  }

  private forgottenLately(deployment: string): boolean {
    const at = this.forgottenAt.get(deployment);
    return at !== undefined && Date.now() - at < FORGOTTEN_MS;
  }

  /** The Prometheus text exposition of every metric, levels read now. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** The `Content-Type` of {@link text}. */
  get contentType(): string {
    return this.registry.contentType;
  }
}
