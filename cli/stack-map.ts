import { isAbsolute } from "node:path";
import { SourceMapConsumer } from "source-map-js";

/**
 * One frame of an isolate's stack at a bundle position: `at add (capsule.js:12:5)` or
 * `at capsule.js:12:5`. `capsule.js` is the name host/isolates/isolate-loader.ts compiles bundles
 * under; frames of the platform's runtime script have other names and are left out.
 */
const BUNDLE_FRAME = /^\s*at (?:(.+) \()?capsule\.js:(\d+):(\d+)\)?$/;

/**
 * Maps the stack frames of a failed handler (bundle positions, as the isolate reports them) to the
 * capsule's source with the bundle's source map: `at add (server/index.ts:12:5)`, paths relative
 * to the capsule folder. Frames outside the capsule folder (the platform's own SDK in a checkout)
 * and the runtime's frames are dropped: they are not the developer's code, and their paths are
 * this machine's. Answers undefined when no frame is left.
 */
export function sourceStackMapper(sourceMapJson: string): (stack: string) => string | undefined {
  const consumer = new SourceMapConsumer(JSON.parse(sourceMapJson));
  return (stack) => {
    const frames: string[] = [];
    for (const line of stack.split("\n")) {
      const match = BUNDLE_FRAME.exec(line);
      if (!match) continue;
      const [, fn, bundleLine, bundleColumn] = match;
      // V8 counts columns from 1, source maps from 0.
      const at = consumer.originalPositionFor({ line: Number(bundleLine), column: Number(bundleColumn) - 1 });
      if (!at.source || at.source.startsWith("../") || isAbsolute(at.source)) continue;
      const where = `${at.source}:${at.line}:${at.column + 1}`;
      frames.push(`    at ${fn ? `${fn} (${where})` : where}`);
    }
    return frames.length > 0 ? frames.join("\n") : undefined;
  };
}
