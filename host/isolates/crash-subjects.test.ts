import { afterAll, describe, expect, it } from "vitest";
import { queryRequest } from "../../test/helpers/query-request.js";
import type { CapsuleIsolate } from "./capsule-isolate.js";
import { crashWordsOf } from "./crash-subjects.js";
import { IsolatePool } from "./isolate-pool.js";

const CODE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: {} } },
  definition: { queries: { ok: async () => 1 } },
};`;

const pool = new IsolatePool(async () => CODE, { spareIsolate: false });
afterAll(() => pool.close());

describe("whose code an isolate runs, as a crash would name it", () => {
  it("is a deploy's until its isolate serves, then follows the owner its callers name", async () => {
    const probe = await pool.probe("app", "dev_1", CODE, "hash1");
    expect(crashWordsOf(probe.isolate)).toBe("hash1 app dev_1 deploy");
    const runner = pool.runner("app", "hash1", "dev_1");
    runner.adopt(probe);
    expect(crashWordsOf(probe.isolate)).toBe("hash1 app dev_1 call");
    // Claimed by another developer (or read fresh after the host's cache had none).
    pool.runner("app", "hash1", "dev_2");
    expect(crashWordsOf(probe.isolate)).toBe("hash1 app dev_2 call");
    // A caller that names no owner leaves it.
    pool.runner("app", "hash1");
    expect(crashWordsOf(probe.isolate)).toBe("hash1 app dev_2 call");
  });

  it("names no one for an unclaimed deployment's deploy", async () => {
    const probe = await pool.probe("open", null, CODE, "hash2");
    expect(crashWordsOf(probe.isolate)).toBe("hash2 open - deploy");
    probe.dispose();
  });

  it("names an isolate for the owner its deployment got while it started (a claim during a cold start)", async () => {
    const create = pool.factory.create.bind(pool.factory);
    // The claim lands once the isolate's start has begun, named for no owner.
    pool.factory.create = (...args) => {
      pool.runner("claimed", "hash3", "dev_3");
      return create(...args);
    };
    const runner = pool.runner("claimed", "hash3", null);
    try {
      await runner.run(queryRequest("ok"), () => null);
    } finally {
      pool.factory.create = create;
    }
    const live = (runner as unknown as { isolate: CapsuleIsolate }).isolate;
    expect(crashWordsOf(live.isolate)).toBe("hash3 claimed dev_3 call");
  });
});
