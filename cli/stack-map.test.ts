import { readFile } from "node:fs/promises";
import { expect, it } from "vitest";
import { bundleCapsule } from "./bundle.js";
import { sourceStackMapper } from "./stack-map.js";

/** 1-based line and column of `needle` in `text`, as V8 and editors count them. */
function positionOf(text: string, needle: string): { line: number; column: number } {
  const at = text.indexOf(needle);
  expect(at).toBeGreaterThanOrEqual(0);
  const before = text.slice(0, at).split("\n");
  return { line: before.length, column: (before.at(-1) as string).length + 1 };
}

it("maps bundle frames to the capsule's source and drops the runtime's and the SDK's frames", async () => {
  const bundle = await bundleCapsule("fixtures/todo");
  const source = await readFile("fixtures/todo/server/index.ts", "utf8");
  const thrown = "new Error(`No todo ";
  const inBundle = positionOf(bundle.code, thrown);
  const inSource = positionOf(source, thrown);
  // platform/server's capsule(), bundled from this checkout's sdk/server: outside the capsule folder.
  const sdkFrame = positionOf(bundle.code, "function capsule(");
  const mapped = sourceStackMapper(bundle.sourceMap)(
    [
      `    at toggle (capsule.js:${inBundle.line}:${inBundle.column})`,
      `    at capsule (capsule.js:${sdkFrame.line}:${sdkFrame.column})`,
      "    at run (platform-runtime.js:120:7)",
      `    at capsule.js:${inBundle.line}:${inBundle.column}`,
    ].join("\n"),
  );
  expect(mapped).toBe(
    [
      `    at toggle (server/index.ts:${inSource.line}:${inSource.column})`,
      `    at server/index.ts:${inSource.line}:${inSource.column}`,
    ].join("\n"),
  );
  expect(sourceStackMapper(bundle.sourceMap)("    at run (platform-runtime.js:1:1)")).toBeUndefined();
});
