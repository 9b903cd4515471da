import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { jsonListBody, OpenListings } from "./json-list.js";

async function text(body: NodeJS.ReadableStream): Promise<string> {
  let all = "";
  for await (const piece of body) all += String(piece);
  return all;
}

describe("jsonListBody", () => {
  it("is the JSON of { field: items }", async () => {
    const items = [{ id: "a", tags: ["x"] }, { id: 'b\u2028"' }, null, 3];
    expect(JSON.parse(await text(jsonListBody("deploys", items)))).toEqual({ deploys: items });
    expect(JSON.parse(await text(jsonListBody("deploys", [])))).toEqual({ deploys: [] });
  });

  it("gives the event loop back while it makes a long list", async () => {
    const loop = { turn: 0, stopped: false };
    const tick = () => {
      loop.turn++;
      if (!loop.stopped) setImmediate(tick);
    };
    const turns = new Set<number>();
    // Each item takes 2 ms or more to write: 20 of them, 40 ms or more in all.
    const items = Array.from({ length: 20 }, (_, index) => ({
      toJSON() {
        const until = performance.now() + 2;
        while (performance.now() < until);
        turns.add(loop.turn);
        return { index };
      },
    }));
    setImmediate(tick);
    const parsed = JSON.parse(await text(jsonListBody("deploys", items))) as { deploys: unknown[] };
    loop.stopped = true;
    expect(parsed.deploys).toHaveLength(20);
    expect(turns.size).toBeGreaterThan(1);
  });

  it("keeps at most a few listings of one caller open: a client that reads none cannot pile them up", () => {
    const listings = new OpenListings(2);
    const response = () => new EventEmitter() as unknown as ServerResponse;
    const first = response();
    listings.begin("dev-1", first);
    listings.begin("dev-1", response());
    expect(() => listings.begin("dev-1", response())).toThrow(
      expect.objectContaining({ code: "limit_exceeded", retryAfterSeconds: 1 }),
    );
    expect(() => listings.begin("dev-2", response())).not.toThrow();
    first.emit("close");
    expect(() => listings.begin("dev-1", response())).not.toThrow();
  });
});
