import { describe, expect, it } from "vitest";
import { ChangedKeys } from "./changed-keys.js";

const text = (value: string) => Buffer.from(value);

describe("ChangedKeys", () => {
  it("touches a range holding a written key: its start included, its end not", () => {
    const changed = new ChangedKeys();
    changed.wrote([text("m"), text("c")]);
    expect(changed.touches(text("c"), text("d"))).toBe(true);
    expect(changed.touches(text("a"), text("c"))).toBe(false);
    expect(changed.touches(text("d"), text("m"))).toBe(false);
    expect(changed.touches(text("d"), text("m\u0000"))).toBe(true);
    expect(changed.touches(text("n"), text("z"))).toBe(false);
    changed.wrote([text("p")]);
    expect(changed.touches(text("n"), text("z"))).toBe(true);
  });

  it("touches a range that overlaps a cleared one", () => {
    const changed = new ChangedKeys();
    changed.cleared({ gte: text("f"), lt: text("h") });
    expect(changed.touches(text("a"), text("f"))).toBe(false);
    expect(changed.touches(text("a"), text("f\u0000"))).toBe(true);
    expect(changed.touches(text("g"), text("g\u0000"))).toBe(true);
    expect(changed.touches(text("h"), text("z"))).toBe(false);
  });

  it("touches every range after a write that may have changed anything, or after too many keys", () => {
    const unknown = new ChangedKeys();
    unknown.anything();
    expect(unknown.touches(text("a"), text("b"))).toBe(true);
    const many = new ChangedKeys();
    many.wrote(Array.from({ length: 5000 }, (_, i) => text(`k${String(i).padStart(5, "0")}`)));
    expect(many.touches(text("a"), text("b"))).toBe(true);
  });
});
