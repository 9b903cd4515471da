/**
 * Inline entries are gathered per turn of the event loop (host/isolates/capsule-isolate.ts): calls
 * made in one turn enter the isolate once it ends, one after another in the order they came.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CapsuleIsolate, type SyscallHandler } from "../host/isolates/index.js";
import { bundleCapsule } from "../sdk/cli/bundle.js";
import { type DispatchRequest, SYSCALL } from "../sdk/protocol/index.js";

const CAPSULE = `import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { items: table({ label: string() }) },
  queries: { echo: async (ctx, args) => { await ctx.db.items.get(args.id); return args.id; } },
});
`;

let scratch: string;
let code: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "platform-inline-turn-"));
  await mkdir(join(scratch, "server"), { recursive: true });
  await writeFile(join(scratch, "server", "index.ts"), CAPSULE);
  code = (await bundleCapsule(scratch)).code;
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

function echo(id: string): DispatchRequest {
  return {
    kind: "query",
    requestId: 0,
    name: "echo",
    argsJson: JSON.stringify({ id }),
    identity: null,
    env: {},
    now: Date.now(),
    seed: 1,
  };
}

describe("inline entries gathered per turn of the event loop", () => {
  it("calls made in one turn are entered once it ends, in order, and still inline", async () => {
    const isolate = await CapsuleIsolate.create(code, "inline-turn");
    try {
      const reads: string[] = [];
      const onSyscall: SyscallHandler = (op, args) => {
        if (op === SYSCALL.dbGet) reads.push((args as { id: string }).id);
        return null;
      };
      const ids = ["first", "second", "third", "fourth"];
      expect(isolate.mayRunInline()).toBe(true);
      const answers = ids.map((id) => isolate.execute(echo(id), onSyscall));
      // Nothing has entered the isolate while this turn runs.
      expect(reads).toEqual([]);
      const responses = await Promise.all(answers);
      expect(reads).toEqual(ids);
      expect(responses.map((response) => (response.ok ? JSON.parse(response.valueJson) : response))).toEqual(
        ids,
      );
      expect(isolate.mayRunInline()).toBe(true);
    } finally {
      isolate.dispose();
    }
  });
});
