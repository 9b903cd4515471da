import { Counter, Gauge, type Registry } from "prom-client";
import { LIMITS } from "../../sdk/protocol/index.js";

/** One PostgreSQL connection pool of the host, as `pg.Pool` counts it. */
export interface PoolUse {
  pool: string;
  max: number;
  total: number;
  idle: number;
  waiting: number;
}

/**
 * Where a scrape reads the host's levels. Each is read only when `/metrics` is asked, so keeping
 * them costs the call path nothing.
 */
export interface MetricSources {
  /** Isolates loaded now. */
  liveIsolates(): number;
  /** Calls executing now, each holding one of the host's execution slots. */
  busySlots(): number;
  /** Calls waiting for an execution slot, by deployment (only deployments with some waiting). */
  waitingCalls(): Iterable<[deployment: string, calls: number]>;
  /** Deployments held to the slots of those stopped for a limit lately. */
  breachedDeployments(): Iterable<string>;
  /** Live query subscribers, by deployment. */
  liveSubscriptions(): Iterable<[deployment: string, subscribers: number]>;
  /**
   * What this server process refuses now because its code crashed an earlier one: bundles,
   * deployments and developers.
   */
  quarantined(): { bundles: number; deployments: number; owners: number };
  /** Bytes of request bodies arriving now (held in memory until each body ended). */
  requestBodyBytesArriving(): number;
  /** Stored bytes by quota owner, at most `limit` owners. */
  storageBytes(limit: number): Promise<Iterable<[owner: string, bytes: number]>>;
  /** The PostgreSQL pools, when the database is PostgreSQL. */
  postgresPools?: () => PoolUse[];
  /** The code cache's counts since the host started, by result (hit, miss, rejected, ...). */
  codeCache?: () => Record<string, number>;
}

/** `gauge` set to exactly `entries` (series of labels no longer present disappear). */
function setAll(gauge: Gauge<string>, entries: Iterable<[string, number]>): void {
  gauge.reset();
  for (const [label, value] of entries) gauge.labels(label).set(value);
}

/** Resolves `read()`, or `undefined` after {@link LIMITS.metricsReadMs} or on error. */
async function within<T>(read: () => Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, LIMITS.metricsReadMs, undefined);
  });
  try {
    return await Promise.race([read(), late]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Registers the host's level gauges on `registry`, each filled from `sources` when scraped.
 * Storage usage is read from the database within {@link LIMITS.metricsReadMs}: a scrape while the
 * database is down still answers, without the storage series.
 */
export function watchSources(registry: Registry, sources: MetricSources): void {
  const registers = [registry];
  new Gauge({
    name: "platform_isolates_live",
    help: "Isolates loaded now.",
    registers,
    collect() {
      this.set(sources.liveIsolates());
    },
  });
  new Gauge({
    name: "platform_execution_slots_busy",
    help: "Calls executing now, each holding one of the host's execution slots.",
    registers,
    collect() {
      this.set(sources.busySlots());
    },
  });
  new Gauge({
    name: "platform_calls_waiting",
    help: "Calls waiting in their deployment's queue for an execution slot.",
    labelNames: ["deployment"],
    registers,
    collect() {
      setAll(this, sources.waitingCalls());
    },
  });
  new Gauge({
    name: "platform_breached_deployments",
    help: "Deployments whose calls share the few slots of those stopped for a limit lately (1 each).",
    labelNames: ["deployment"],
    registers,
    collect() {
      setAll(
        this,
        [...sources.breachedDeployments()].map((id): [string, number] => [id, 1]),
      );
    },
  });
  new Gauge({
    name: "platform_live_subscriptions",
    help: "Live query subscribers (one per subscription of each socket).",
    labelNames: ["deployment"],
    registers,
    collect() {
      setAll(this, sources.liveSubscriptions());
    },
  });
  new Gauge({
    name: "platform_quarantined_bundles",
    help: "Bundles refused now (503) because a call to them crashed an earlier server process.",
    registers,
    collect() {
      this.set(sources.quarantined().bundles);
    },
  });
  new Gauge({
    name: "platform_quarantined_deployments",
    help: "Deployments whose calls are refused now (503), whatever bundle they run, because their code crashed an earlier server process.",
    registers,
    collect() {
      this.set(sources.quarantined().deployments);
    },
  });
  new Gauge({
    name: "platform_quarantined_developers",
    help: "Developers all of whose deployments' calls are refused now (503) because several of them crashed earlier server processes.",
    registers,
    collect() {
      this.set(sources.quarantined().owners);
    },
  });
  new Gauge({
    name: "platform_request_body_bytes_arriving",
    help: `Bytes of request bodies arriving now, held in memory until each body ended (at most ${LIMITS.requestBodyBytesArrivingPerClient} per client address, ${LIMITS.requestBodyBytesArriving} in all).`,
    registers,
    collect() {
      this.set(sources.requestBodyBytesArriving());
    },
  });
  new Gauge({
    name: "platform_storage_bytes",
    help: `Stored object bytes by quota owner (a developer id, or dev:<deployment> while unclaimed; at most ${LIMITS.metricsStorageOwners} owners).`,
    labelNames: ["owner"],
    registers,
    async collect() {
      setAll(this, (await within(() => sources.storageBytes(LIMITS.metricsStorageOwners))) ?? []);
    },
  });
  const codeCache = sources.codeCache;
  if (codeCache)
    new Counter({
      name: "platform_code_cache_compiles_total",
      help: "Compiles of the runtime and capsules by code-cache result, and caches discarded or refreshed.",
      labelNames: ["result"],
      registers,
      collect() {
        this.reset();
        for (const [result, count] of Object.entries(codeCache())) this.labels(result).inc(count);
      },
    });
  const pools = sources.postgresPools;
  if (!pools) return;
  const poolGauge = (name: string, help: string, value: (use: PoolUse) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["pool"],
      registers,
      collect() {
        setAll(
          this,
          pools().map((use) => [use.pool, value(use)]),
        );
      },
    });
  poolGauge("platform_postgres_connections_max", "Connections a PostgreSQL pool may open.", (u) => u.max);
  poolGauge("platform_postgres_connections", "Connections a PostgreSQL pool has open.", (u) => u.total);
  poolGauge("platform_postgres_connections_idle", "Open connections of a pool not in use.", (u) => u.idle);
  poolGauge(
    "platform_postgres_waiting",
    "Requests waiting for a connection of a PostgreSQL pool.",
    (u) => u.waiting,
  );
}
