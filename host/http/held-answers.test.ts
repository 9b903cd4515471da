import { expect, it } from "vitest";
import { HeldAnswers } from "./held-answers.js";

it("holds answers within each address's share and the host's, and gives them back once", () => {
  const held = new HeldAnswers(100, 60);
  const a1 = held.hold("a", 40);
  expect(a1).toBeDefined();
  // Past the address's share, though the host has room.
  expect(held.hold("a", 30)).toBeUndefined();
  const b1 = held.hold("b", 50);
  expect(b1).toBeDefined();
  // Past the host's, though the address has room.
  expect(held.hold("c", 20)).toBeUndefined();
  a1?.();
  a1?.();
  expect(held.heldFor("a")).toBe(0);
  expect(held.heldFor()).toBe(50);
  expect(held.hold("c", 20)).toBeDefined();
  b1?.();
  expect(held.heldFor()).toBe(20);
});
