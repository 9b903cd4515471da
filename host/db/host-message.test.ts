import { expect, it } from "vitest";
import { checkHostMessage } from "./host-message.js";

it("takes host messages of known shapes only", () => {
  for (const junk of [
    null,
    7,
    "commit",
    [],
    {},
    { type: "nope" },
    { type: "deployment" },
    { type: "schema" },
  ])
    expect(checkHostMessage(junk)).toBeUndefined();
  expect(checkHostMessage({ type: "commit", deployment: "a", keys: ["zz"] })).toBeUndefined();
  expect(checkHostMessage({ type: "commit", deployment: "a", keys: "00" })).toBeUndefined();
  expect(checkHostMessage({ type: "commit", deployment: "a", all: "yes" })).toBeUndefined();
  expect(checkHostMessage({ type: "commit", deployment: "a", keys: ["00ff"] })).toEqual({
    type: "commit",
    deployment: "a",
    keys: ["00ff"],
  });
  expect(checkHostMessage({ type: "commit", deployment: "a", all: true })).toMatchObject({ all: true });
  expect(checkHostMessage({ type: "schema", deployment: "a" })).toEqual({ type: "schema", deployment: "a" });
  expect(checkHostMessage({ type: "deployment", id: "a" })).toEqual({ type: "deployment", id: "a" });
  expect(checkHostMessage({ type: "resync", extra: 1 })).toEqual({ type: "resync" });
});
