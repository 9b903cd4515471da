import { describe, expect, it } from "vitest";
import { quotaKey, RequestQuota } from "./request-quota.js";

describe("RequestQuota", () => {
  it("allows a burst, then refills at the given rate", () => {
    const quota = new RequestQuota({ perSecond: 10, burst: 3 });
    const t = 1_000_000;
    expect([1, 2, 3].map(() => quota.tryTake("a", 1, t))).toEqual([true, true, true]);
    expect(quota.tryTake("a", 1, t)).toBe(false);
    expect(quota.waitMs("a", 1, t)).toBe(100);
    expect(quota.tryTake("b", 1, t)).toBe(true);
    expect(quota.tryTake("a", 1, t + 100)).toBe(true);
    expect(quota.tryTake("a", 1, t + 100)).toBe(false);
    expect(quota.tryTake("a", 1, t + 60_000)).toBe(true);
  });

  it("charges identities and anonymous callers (by address) separately", () => {
    expect(quotaKey("d", { userId: "guest:x", kind: "guest" }, "1.2.3.4")).not.toBe(
      quotaKey("d", null, "1.2.3.4"),
    );
    expect(quotaKey("d", null, "1.2.3.4")).not.toBe(quotaKey("e", null, "1.2.3.4"));
  });

  it("fails with limit_exceeded saying when to retry, and can be turned off", () => {
    const quota = new RequestQuota({ perSecond: 0.5, burst: 1 });
    quota.charge("k");
    expect(() => quota.charge("k")).toThrow(/Request quota exceeded: .* retry in 2 s\./);
    const off = new RequestQuota(false);
    for (let i = 0; i < 10_000; i++) off.charge("k");
  });
});
