import { describe, expect, it } from "vitest";
import { OwnerLimit } from "./owner-limit.js";

describe("OwnerLimit", () => {
  it("runs at most max of one owner at once, the rest in arrival order, and others beside them", async () => {
    const limit = new OwnerLimit(2);
    const order: string[] = [];
    const gates: Array<() => void> = [];
    const held = (name: string) =>
      limit.run("a", async () => {
        order.push(name);
        await new Promise<void>((resolve) => gates.push(resolve));
      });
    const runs = ["a1", "a2", "a3", "a4"].map(held);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual(["a1", "a2"]);
    expect(limit.runningOf("a")).toBe(2);
    // Another owner is not held up by a's.
    expect(await limit.run("b", async () => "b ran")).toBe("b ran");
    gates.shift()?.();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual(["a1", "a2", "a3"]);
    // A failing run gives its place back too.
    const failed = limit
      .run("a", async () => {
        throw new Error("no");
      })
      .catch((error: Error) => error.message);
    for (let i = 0; i < 4; i++) {
      gates.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await Promise.all(runs);
    expect(await failed).toBe("no");
    expect(order).toEqual(["a1", "a2", "a3", "a4"]);
    expect(limit.runningOf("a")).toBe(0);
  });
});
