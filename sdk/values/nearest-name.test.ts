import { describe, expect, it } from "vitest";
import { editDistance, nearestName } from "./nearest-name.js";

describe("editDistance", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(editDistance("", "")).toBe(0);
    expect(editDistance("list", "list")).toBe(0);
    expect(editDistance("lsit", "list")).toBe(1);
    expect(editDistance("ab", "ba")).toBe(1);
    expect(editDistance("lst", "list")).toBe(1);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
  });
});

describe("nearestName", () => {
  const names = ["list", "listDone", "add", "toggle", "remove"];

  it("offers the closest name within a typo's distance", () => {
    expect(nearestName("lsit", names)).toBe("list");
    expect(nearestName("lists", names)).toBe("list");
    expect(nearestName("togle", names)).toBe("toggle");
    expect(nearestName("listdone", names)).toBe("listDone");
    expect(nearestName("ADD", names)).toBe("add");
  });

  it("offers nothing for unrelated names, the name itself, or no candidates", () => {
    expect(nearestName("count", names)).toBeUndefined();
    expect(nearestName("x", names)).toBeUndefined();
    expect(nearestName("list", ["list"])).toBeUndefined();
    expect(nearestName("list", [])).toBeUndefined();
  });
});
