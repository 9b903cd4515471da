import { describe, expect, it } from "vitest";
import { KeptArgs, SubscriptionArgs, SYNC_LIMITS } from "./sync-messages.js";

/**
 * Opens connections (`connection(n)` makes the nth) of 1,000 subscriptions with the shortest
 * arguments there are, until one is refused or `most` connections are open.
 */
function fill(connection: (n: number) => SubscriptionArgs, most = Number.POSITIVE_INFINITY) {
  const connections: SubscriptionArgs[] = [];
  let kept = 0;
  let refusal: unknown;
  for (let n = 0; n < most && refusal === undefined; n++) {
    const opened = connection(n);
    connections.push(opened);
    for (let i = 0; i < 1000; i++) {
      try {
        opened.keep(`s${i}`, "q", "{}");
        kept++;
      } catch (error) {
        refusal = error;
        break;
      }
    }
  }
  return { connections, kept, refusal };
}

describe("what subscriptions keep", () => {
  it("counts each subscription at least its floor: one client address holds 16,384 at most, all connections together", () => {
    const addresses = new KeptArgs();
    const address = addresses.of("10.0.0.1");
    // Twenty connections of 1,000 subscriptions with the shortest arguments there are.
    const { connections, kept, refusal } = fill(() => new SubscriptionArgs(address), 20);
    expect(kept).toBe(SYNC_LIMITS.addressArgsBytes / SYNC_LIMITS.subscriptionBytesAtLeast);
    expect(kept).toBe(16_384);
    expect(refusal).toMatchObject({ code: "bad_request" });
    expect((refusal as Error).message).toContain("where each subscription counts at least 1024");
    // Another address has its own room; a closed connection gives its room back.
    expect(() => new SubscriptionArgs(addresses.of("10.0.0.2")).keep("s0", "q", "{}")).not.toThrow();
    connections[0]?.releaseAll();
    expect(() => new SubscriptionArgs(address).keep("again", "q", "{}")).not.toThrow();
  });

  it("bounds all clients of one deployment together: 65,536 subscriptions, refused as unavailable, others unaffected", () => {
    const addresses = new KeptArgs();
    const deployments = new KeptArgs();
    const app = deployments.of("app");
    // Many addresses (an IPv6 client rotating through its /64s), each within its own bounds.
    const { connections, kept, refusal } = fill(
      (n) => new SubscriptionArgs(addresses.of(`2001:db8:${n}::`), app),
    );
    expect(kept).toBe(SYNC_LIMITS.deploymentArgsBytes / SYNC_LIMITS.subscriptionBytesAtLeast);
    expect(kept).toBe(65_536);
    expect(refusal).toMatchObject({ code: "unavailable", retryAfterSeconds: 10 });
    expect(deployments.of("app").kept()).toBe(SYNC_LIMITS.deploymentArgsBytes);
    // Another deployment has its own room; a closed connection gives the deployment's back.
    expect(() =>
      new SubscriptionArgs(addresses.of("10.0.0.9"), deployments.of("other")).keep("s", "q", "{}"),
    ).not.toThrow();
    const leaving = new SubscriptionArgs(addresses.of("10.0.0.10"), app);
    expect(() => leaving.keep("s", "q", "{}")).toThrow();
    expect(app.kept()).toBe(SYNC_LIMITS.deploymentArgsBytes);
    connections[0]?.releaseAll();
    expect(() => leaving.keep("s", "q", "{}")).not.toThrow();
  });
});
