/**
 * Calls in flight when a redeploy lands get the old code's answers, not a `503`: the replaced
 * isolate is freed once they end. Only one replaced isolate drains per deployment: a second
 * redeploy meanwhile frees the first at once, so redeploying in a loop while calls wait holds no
 * more isolates. Real host; each in-flight call's database read is held (its isolate's syscalls
 * wait on a gate) until the test lets it go.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { CallExecutor } from "../host/deployments/call-execution.js";
import type { CapsuleIsolate } from "../host/isolates/index.js";
import { deferred } from "./helpers/deferred.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
});

afterAll(() => host.dispose());

/** A capsule whose `say` reads the notes table, then answers `answer` (and its env's `WHO`). */
function bundle(answer: string): Promise<string> {
  return sourceCode(`import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { notes: table({ text: string() }) },
  queries: { say: async (ctx) => { await ctx.db.notes.take(1); ctx.log.info("said ${answer}"); return "${answer}" + (ctx.env.WHO ? ":" + ctx.env.WHO : ""); } },
});
`);
}

function say(): Promise<unknown> {
  return host.deployments
    .call("app", { kind: "query", name: "say", argsJson: "{}", identity: null })
    .then((response) => JSON.parse(response.valueJson));
}

/** The deployment's live isolate, with its calls' database reads held until `gate` opens. */
function holdReads(gate: Promise<void>): { isolate: CapsuleIsolate; reading: Promise<void> } {
  const runner = host.deployments.pool.runner("app", "");
  const isolate = (runner as unknown as { isolate: CapsuleIsolate }).isolate;
  const reached = deferred();
  const execute = isolate.execute.bind(isolate);
  isolate.execute = (request, onSyscall) =>
    execute(request, async (...call) => {
      reached.resolve();
      await gate;
      return onSyscall(...call);
    });
  return { isolate, reading: reached.promise };
}

it("answers a call in flight at a redeploy with the old code, then frees the old isolate", async () => {
  await host.deployments.deploy("app", { code: await bundle("one") });
  expect(await say()).toBe("one");
  const gate = deferred();
  const old = holdReads(gate.promise);
  const inFlight = say();
  await old.reading;
  await host.deployments.deploy("app", { code: await bundle("two") });
  // The new code answers new calls while the old call still waits.
  expect(await say()).toBe("two");
  expect(old.isolate.isDisposed).toBe(false);
  gate.resolve();
  expect(await inFlight).toBe("one");
  expect(old.isolate.isDisposed).toBe(true);
});

it("drains one replaced isolate at a time: a second redeploy frees the first at once", async () => {
  await host.deployments.deploy("app", { code: await bundle("first") });
  expect(await say()).toBe("first");
  const firstGate = deferred();
  const first = holdReads(firstGate.promise);
  const onFirst = say().then(
    (value) => ({ value }),
    (error: { code?: string }) => ({ error: error.code }),
  );
  await first.reading;
  await host.deployments.deploy("app", { code: await bundle("second") });
  expect(await say()).toBe("second");
  const secondGate = deferred();
  const second = holdReads(secondGate.promise);
  const onSecond = say();
  await second.reading;
  await host.deployments.deploy("app", { code: await bundle("third") });
  // The first replaced isolate is gone, and its call with it; the second drains.
  expect(first.isolate.isDisposed).toBe(true);
  expect(await onFirst).toEqual({ error: "unavailable" });
  expect(second.isolate.isDisposed).toBe(false);
  expect(await say()).toBe("third");
  secondGate.resolve();
  firstGate.resolve();
  expect(await onSecond).toBe("second");
  expect(second.isolate.isDisposed).toBe(true);
});

it("keeps draining when the new code's isolate is stopped meanwhile, and the next call starts a new one", async () => {
  await host.deployments.deploy("app", { code: await bundle("before") });
  expect(await say()).toBe("before");
  const gate = deferred();
  const old = holdReads(gate.promise);
  const inFlight = say();
  await old.reading;
  await host.deployments.deploy("app", { code: await bundle("after") });
  expect(await say()).toBe("after");
  // The new code's isolate is stopped (as a limit stops one): the next call starts another, and
  // the old isolate's call goes on.
  const runner = host.deployments.pool.runner("app", "");
  (runner as unknown as { isolate: CapsuleIsolate }).isolate.dispose();
  expect(await say()).toBe("after");
  expect(old.isolate.isDisposed).toBe(false);
  gate.resolve();
  expect(await inFlight).toBe("before");
  expect(old.isolate.isDisposed).toBe(true);
});

it("never switches back to the code of a record read before a redeploy landed", async () => {
  await host.deployments.deploy("app", { code: await bundle("older"), env: { WHO: "old" } });
  const olderRecord = await host.deployments.require("app");
  const older = olderRecord.artifact;
  expect(await say()).toBe("older:old");
  await host.deployments.deploy("app", { code: await bundle("newer"), env: { WHO: "new" } });
  expect(await say()).toBe("newer:new");
  const runner = host.deployments.pool.runner("app", "");
  const serving = (runner as unknown as { isolate: CapsuleIsolate }).isolate;
  // A call whose record was read before the redeploy asks for its runner with the old artifact.
  expect(host.deployments.pool.runner("app", older)).toBe(runner);
  expect(runner.artifact).not.toBe(older);
  expect(await say()).toBe("newer:new");
  expect(serving.isDisposed).toBe(false);
  // And such a call starts again with the new record: the new code runs it with its own env.
  const calls = (host.deployments as unknown as { calls: CallExecutor }).calls;
  const stale = await calls.call(olderRecord, { kind: "query", name: "say", argsJson: "{}", identity: null });
  expect(JSON.parse(stale.valueJson)).toBe("newer:new");
  expect(serving.isDisposed).toBe(false);
});

it("leaves nothing of a call in flight when its deployment is deleted to the next deployment of that id", async () => {
  await host.deployments.deploy("app", { code: await bundle("private"), env: {} });
  expect(await say()).toBe("private");
  const gate = deferred();
  const old = holdReads(gate.promise);
  const inFlight = say().catch((error: { code?: string }) => error.code);
  await old.reading;
  await host.deployments.remove(await host.deployments.require("app"));
  await host.deployments.deploy("app", { code: await bundle("public") });
  // The deleted deployment's call ends now; its line and figures must not reach the new one.
  gate.resolve();
  expect(await inFlight).toBe("unavailable");
  const lines = host.deployments.logs.recent("app");
  expect(lines.map((line) => line.message).join("\n")).not.toContain("private");
  expect(lines).toEqual([]);
  expect(host.deployments.logs.stats.summary("app").handlers).toEqual([]);
});
