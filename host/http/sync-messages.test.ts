import { describe, expect, it } from "vitest";
import { KeptArgs, SubscriptionArgs, SYNC_LIMITS } from "./sync-messages.js";

describe("what subscriptions keep", () => {
  it("counts each subscription at least its floor: one client address holds 16,384 at most, all connections together", () => {
    const addresses = new KeptArgs();
    const address = addresses.of("10.0.0.1");
    const connections: SubscriptionArgs[] = [];
    let kept = 0;
    let refusal: unknown;
    // Twenty connections of 1,000 subscriptions with the shortest arguments there are.
    for (let socket = 0; socket < 20 && refusal === undefined; socket++) {
      const connection = new SubscriptionArgs(address);
      connections.push(connection);
      for (let i = 0; i < 1000; i++) {
        try {
          connection.keep(`s${i}`, "q", "{}");
          kept++;
        } catch (error) {
          refusal = error;
          break;
        }
      }
    }
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
    const connections: SubscriptionArgs[] = [];
    let kept = 0;
    let refusal: unknown;
    // Many addresses (an IPv6 client rotating through its /64s), each within its own bounds.
    for (let client = 0; refusal === undefined; client++) {
      const connection = new SubscriptionArgs(addresses.of(`2001:db8:${client}::`), app);
      connections.push(connection);
      for (let i = 0; i < 1000; i++) {
        try {
          connection.keep(`s${i}`, "q", "{}");
          kept++;
        } catch (error) {
          refusal = error;
          break;
        }
      }
    }
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
