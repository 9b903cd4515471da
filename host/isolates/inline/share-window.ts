/**
 * Inline CPU in the current share window ({@link InlinePolicy.windowMs}): one deployment's, or all
 * the deployments of one developer together (see InlineStanding.charge).
 */
export class ShareWindow {
  private cpuNs = 0n;
  private start = 0;

  constructor(private readonly windowMs: number) {}

  /** CPU (ns) in the current window; 0 once it is over. */
  get recentNs(): number {
    return Date.now() - this.start >= this.windowMs ? 0 : Number(this.cpuNs);
  }

  /** Adds `ns` to the current window (a new one once it is over); answers the window's CPU now. */
  add(ns: bigint): bigint {
    const now = Date.now();
    if (now - this.start >= this.windowMs) {
      this.start = now;
      this.cpuNs = 0n;
    }
    this.cpuNs += ns;
    return this.cpuNs;
  }

  /** Starts the count over (a demotion). */
  clear(): void {
    this.cpuNs = 0n;
  }
}
