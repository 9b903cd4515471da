import { describe, expect, it } from "vitest";
import { ArgsPerAddress, SubscriptionArgs, SYNC_LIMITS } from "./sync-messages.js";

describe("what subscriptions keep", () => {
  it("counts each subscription at least its floor: one client address holds 16,384 at most, all connections together", () => {
    const addresses = new ArgsPerAddress();
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
});
