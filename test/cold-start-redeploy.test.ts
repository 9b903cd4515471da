/**
 * A redeploy that lands while a cold start of the old artifact is under way: the request waiting
 * for that start is served by the new code, and neither isolate is left behind. Real host; the
 * old artifact's isolate creation is held until the redeploy has landed.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { type PlatformHost, startHost } from "../host/host.js";
import type { CapsuleIsolate } from "../host/isolates/capsule-isolate.js";
import { deferred } from "./helpers/deferred.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-redeploy-race-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function bundle(answer: string): Promise<string> {
  const source = join(dir, answer);
  await mkdir(join(source, "server"), { recursive: true });
  await writeFile(
    join(source, "server", "index.ts"),
    `import { capsule } from "platform/server";\nexport default capsule({ schema: {}, queries: { say: async () => "${answer}" } });\n`,
  );
  return (await bundleCapsule(source)).code;
}

async function say(host: PlatformHost): Promise<unknown> {
  const response = await host.deployments.call("app", {
    kind: "query",
    name: "say",
    argsJson: "{}",
    identity: null,
  });
  return JSON.parse(response.valueJson);
}

it("serves a request waiting for the old artifact's cold start with the new code, and disposes of the old isolate", async () => {
  const host = await startHost({
    data: join(dir, "host"),
    port: 0,
    domain: "localhost",
    adminToken: randomBytes(8).toString("hex"),
    logDestination: false,
  });
  try {
    await host.deployments.deploy("app", { code: await bundle("one") });
    const first = (await host.deployments.require("app")).artifact;
    expect(await say(host)).toBe("one");
    const runner = host.deployments.pool.runner("app", first);
    runner.evict();
    // The old artifact's next isolate waits for the redeploy to land.
    const factory = host.deployments.pool.factory;
    const create = factory.create.bind(factory);
    const held = deferred();
    const made: CapsuleIsolate[] = [];
    factory.create = async (code, artifact, ...rest) => {
      if (artifact === first) await held.promise;
      const isolate = await create(code, artifact, ...rest);
      made.push(isolate);
      return isolate;
    };
    const waiting = say(host);
    await host.deployments.deploy("app", { code: await bundle("two") });
    held.resolve();
    expect(await waiting).toBe("two");
    expect(await say(host)).toBe("two");
    const old = made.find((isolate) => isolate.artifact === first);
    expect(old?.isDisposed).toBe(true);
    // Exactly one isolate of the new artifact lives: the one the deploy installed.
    expect(made.filter((isolate) => isolate.artifact !== first && !isolate.isDisposed)).toHaveLength(1);
  } finally {
    await host.close();
  }
});
