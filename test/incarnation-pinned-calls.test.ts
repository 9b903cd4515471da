/**
 * A sync socket's calls and live queries run on the incarnation its token was checked for only. A
 * deployment deleted and created again under its id by another developer gives its users the same
 * ids (derived from the id and the email): a socket of the old one whose call found the new record
 * (a host that had not heard of the deletion, in the instant before it closed the old sockets) ran
 * the new code as the old socket's identity (a review of 4f39562).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { LiveQueries } from "../host/live/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let live: LiveQueries;
let incarnation: string | null;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("pinned", "live")).status).toBe(201);
  live = new LiveQueries(host.deployments);
  incarnation = (await host.deployments.incarnationOf("pinned")) ?? null;
  expect(typeof incarnation).toBe("string");
});
afterAll(async () => {
  live.close();
  await host.dispose();
});

const call = (kind: "query" | "mutation", name: string, args: unknown, pinned: string | null) =>
  host.deployments.call("pinned", {
    kind,
    name,
    argsJson: JSON.stringify(args),
    identity: null,
    incarnation: pinned,
  });

it("refuses a call checked for another incarnation of the id, and runs one checked for this one", async () => {
  await expect(call("mutation", "add", { bucket: 1, text: "old" }, "another")).rejects.toMatchObject({
    code: "not_found",
  });
  await expect(call("query", "byBucket", { bucket: 1 }, null)).rejects.toMatchObject({ code: "not_found" });
  expect((await call("query", "byBucket", { bucket: 1 }, incarnation)).valueJson).toBe("[]");
  await call("mutation", "add", { bucket: 1, text: "mine" }, incarnation);
  expect(JSON.parse((await call("query", "byBucket", { bucket: 1 }, incarnation)).valueJson)).toHaveLength(1);
});

it("gives a live query subscribed for another incarnation the refusal, never the value, and shares no run with this one's", async () => {
  const seen: unknown[] = [];
  const stale = {
    value: (json: string) => seen.push(JSON.parse(json)),
    error: (error: unknown) => seen.push({ error }),
  };
  const mine: unknown[] = [];
  const current = {
    value: (json: string) => mine.push(JSON.parse(json)),
    error: (error: unknown) => mine.push({ error }),
  };
  const args = JSON.stringify({ bucket: 1 });
  await live.subscribe("pinned", "byBucket", args, null, stale, "another");
  await live.subscribe("pinned", "byBucket", args, null, current, incarnation);
  expect(seen).toEqual([{ error: expect.objectContaining({ code: "not_found" }) }]);
  expect(mine).toHaveLength(1);
  expect(mine[0]).toHaveLength(1);
});
