import { describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { KeptArgs, SubscriptionArgs, SubscriptionRooms } from "./subscription-args.js";
import { SYNC_LIMITS } from "./sync-messages.js";

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
    const rooms = new SubscriptionRooms(() => 0);
    // Many addresses (an IPv6 client rotating through its /64s), each within its own bounds.
    const { connections, kept, refusal } = fill(
      (n) => new SubscriptionArgs(addresses.of(`2001:db8:${n}::`), rooms.place("app", `2001:db8:${n}::`)),
    );
    expect(kept).toBe(SYNC_LIMITS.deploymentArgsBytes / SYNC_LIMITS.subscriptionBytesAtLeast);
    expect(kept).toBe(65_536);
    expect(refusal).toMatchObject({
      code: "unavailable",
      retryAfterSeconds: SYNC_LIMITS.fullRetryAfterSeconds,
    });
    expect(rooms.kept("app")).toBe(SYNC_LIMITS.deploymentArgsBytes);
    // Another deployment has its own room; a closed connection gives the deployment's back.
    expect(() =>
      new SubscriptionArgs(addresses.of("10.0.0.9"), rooms.place("other", "10.0.0.9")).keep("s", "q", "{}"),
    ).not.toThrow();
    // No subscription has been kept a second yet: none gives way to a newcomer.
    const leaving = new SubscriptionArgs(addresses.of("10.0.0.10"), rooms.place("app", "10.0.0.10"));
    expect(() => leaving.keep("s", "q", "{}")).toThrow();
    expect(rooms.kept("app")).toBe(SYNC_LIMITS.deploymentArgsBytes);
    connections[0]?.releaseAll();
    expect(() => leaving.keep("s", "q", "{}")).not.toThrow();
    for (const connection of connections) connection.releaseAll();
    leaving.releaseAll();
    expect(rooms.kept("app")).toBe(0);
  });

  it("gives a full deployment's room to an address within an even share, taking the heaviest address's oldest subscriptions", () => {
    let now = 0;
    const addresses = new KeptArgs();
    const rooms = new SubscriptionRooms(() => now);
    // Four addresses at their own bound (16 MiB each) fill the deployment's 64 MiB.
    const ended: string[] = [];
    const attackers = ["a", "b", "c", "d"].map((name) => {
      const address = `198.51.100.${name.charCodeAt(0)}`;
      const connections = Array.from(
        { length: 16 },
        () => new SubscriptionArgs(addresses.of(address), rooms.place("app", address)),
      );
      connections.forEach((connection, c) => {
        for (let i = 0; i < 1000; i++) {
          // The last connections of "a" come later: its first ones are its oldest.
          if (name === "a" && c === 15 && i === 0) now += 1;
          connection.keep(`${name}${c}-${i}`, "q", "{}", () => ended.push(`${name}${c}-${i}`));
        }
      });
      const rest = addresses.of(address);
      for (let i = 0; rest.kept() < SYNC_LIMITS.addressArgsBytes; i++)
        connections[0]?.keep(`${name}x${i}`, "q", "{}", () => ended.push(`${name}x${i}`));
      return connections;
    });
    expect(rooms.kept("app")).toBe(SYNC_LIMITS.deploymentArgsBytes);
    // A newcomer's connections, 4,000 subscriptions each (a connection keeps 4 MiB at most).
    const newcomers = Array.from(
      { length: 4 },
      () => new SubscriptionArgs(addresses.of("192.0.2.1"), rooms.place("app", "192.0.2.1")),
    );
    const subscribe = (i: number) => newcomers[Math.floor(i / 4000)]?.keep(`n${i}`, "q", "{}");
    // Kept for less than a second: still refused.
    expect(() => subscribe(0)).toThrow(expect.objectContaining({ code: "unavailable" }));
    now += LIMITS.heldStalledMs;
    // Now the heaviest address's (all are even: the first of them) oldest subscription gives way.
    subscribe(0);
    expect(ended).toEqual(["a0-0"]);
    expect(addresses.of("198.51.100.97").kept()).toBe(SYNC_LIMITS.addressArgsBytes - 1024);
    expect(rooms.kept("app")).toBe(SYNC_LIMITS.deploymentArgsBytes);
    // The next gives way from the heaviest now, another address.
    subscribe(1);
    expect(ended).toEqual(["a0-0", "b0-0"]);
    // The ended subscription is gone from its connection: releasing it gives nothing back twice.
    attackers[0]?.[0]?.release("a0-0");
    expect(addresses.of("198.51.100.97").kept()).toBe(SYNC_LIMITS.addressArgsBytes - 1024);
    // Up to an even share (a fifth of the room: 13,107 subscriptions), and no more.
    for (let i = 2; i < 13_107; i++) subscribe(i);
    expect(() => subscribe(13_107)).toThrow(expect.objectContaining({ code: "unavailable" }));
    // Everyone holds about an even share now: nobody gives way, for the attackers either.
    expect(() => attackers[1]?.[1]?.keep("again", "q", "{}")).toThrow(
      expect.objectContaining({ code: "unavailable" }),
    );
    expect(ended).toHaveLength(13_107);
    expect(rooms.kept("app")).toBe(SYNC_LIMITS.deploymentArgsBytes);
  });

  it("shares a full room by IPv6 site (/48): the /64s of the site that fills it end nothing of each other's", () => {
    let now = 0;
    const addresses = new KeptArgs();
    const rooms = new SubscriptionRooms(() => now);
    /** Subscribes the client at address key `key` up to its own bound, 4,000 a connection. */
    const fillAddress = (key: string) => {
      const connections: SubscriptionArgs[] = [];
      for (let i = 0; addresses.of(key).kept() < SYNC_LIMITS.addressArgsBytes; i++) {
        if (i % 4000 === 0)
          connections.push(new SubscriptionArgs(addresses.of(key), rooms.place("app", key)));
        connections.at(-1)?.keep(`s${i}`, "q", "{}");
      }
    };
    for (let n = 0; n < 4; n++) fillAddress(`2001:db8:7:${n}::/64`);
    expect(rooms.kept("app")).toBe(SYNC_LIMITS.deploymentArgsBytes);
    now += LIMITS.heldStalledMs;
    // Another /64 of the same /48 is the same site: above its share, it takes nothing.
    const sameSite = new SubscriptionArgs(
      addresses.of("2001:db8:7:9::/64"),
      rooms.place("app", "2001:db8:7:9::/64"),
    );
    expect(() => sameSite.keep("n", "q", "{}")).toThrow(expect.objectContaining({ code: "unavailable" }));
    // Another site is within its share.
    const otherSite = new SubscriptionArgs(
      addresses.of("2001:db8:8:1::/64"),
      rooms.place("app", "2001:db8:8:1::/64"),
    );
    expect(() => otherSite.keep("n", "q", "{}")).not.toThrow();
    expect(rooms.kept("app")).toBe(SYNC_LIMITS.deploymentArgsBytes);
  });
});
