import { expect, it } from "vitest";
import { HeldAnswers } from "./held-answers.js";

it("holds answers within each address's share, each deployment's half and the host's, and gives them back once", () => {
  const held = new HeldAnswers(100, 40);
  const a1 = held.hold("a", "d1", 40);
  expect(a1).toBeDefined();
  // Past the address's share, though the deployment and the host have room.
  expect(held.hold("a", "d2", 1)).toBeUndefined();
  // Past the deployment's half, though the address and the host have room.
  expect(held.hold("b", "d1", 20)).toBeUndefined();
  const b1 = held.hold("b", "d2", 40);
  expect(b1).toBeDefined();
  // Past the host's, though the address and the deployment have room.
  expect(held.hold("c", "d3", 30)).toBeUndefined();
  a1?.();
  a1?.();
  expect(held.heldFor({ address: "a" })).toBe(0);
  expect(held.heldFor({ deployment: "d1" })).toBe(0);
  expect(held.heldFor()).toBe(40);
  expect(held.hold("c", "d3", 30)).toBeDefined();
  b1?.();
  expect(held.heldFor()).toBe(30);
});
