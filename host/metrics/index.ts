/**
 * `host/metrics`: the host's Prometheus metrics (prom-client), one registry per host. A leaf:
 * it imports nothing of the host; the parts it counts call it through observer interfaces of
 * their own, and the levels it samples are handed in as functions (see {@link MetricSources}).
 */
export { CallMetrics } from "./call-metrics.js";
export { type BreachedLimit, type EvictionReason, HostMetrics } from "./host-metrics.js";
export type { MetricSources, PoolUse } from "./sampled-gauges.js";
