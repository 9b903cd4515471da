/**
 * The sandbox suite: hostile capsules, each asserting the host survives, the attack fails with a
 * clear error, and another deployment (the canary) keeps answering.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { describeOnBothTransports, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
/**
 * A host with the same memory and result limits but time limits far beyond what the cases that
 * test those take: filling a 64 MiB heap, or building and copying a 12 MiB result, costs a few
 * hundred ms of CPU on a small machine (fresh pages, GC), more than the 200 ms the main host
 * allows, and isolated-vm measures a running stretch of an isolate on a steady clock, so a busy
 * machine stretches it further. There the limit under test is the first one a handler meets.
 */
let roomy: TestHost;
let scratch: string;
let counter = 0;

const HEADER = `import { capsule, table, string, number } from "platform/server";\n`;

/** Deploys `server/index.ts` = HEADER + body as a fresh deployment; returns its id. */
async function deploySource(body: string, on = host): Promise<{ id: string; status: number; text: string }> {
  const id = `evil${++counter}`;
  const dir = join(scratch, id);
  await mkdir(join(dir, "server"), { recursive: true });
  await writeFile(join(dir, "server", "index.ts"), HEADER + body);
  const { code } = await bundleCapsule(dir);
  const response = await on.deployCode(id, code);
  return { id, status: response.status, text: response.text() };
}

async function deployed(body: string, on = host): Promise<string> {
  const result = await deploySource(body, on);
  expect(result.status, result.text).toBe(201);
  return result.id;
}

/** A capsule with one query `q` running `handler`. */
function queryCapsule(handler: string, extra = ""): string {
  return `${extra}\nexport default capsule({ schema: { items: table({ n: number() }) }, queries: { q: ${handler} }, mutations: { m: ${handler} } });\n`;
}

async function error(
  id: string,
  kind: "query" | "mutation" = "query",
  name = "q",
  args: unknown = {},
  on = host,
) {
  const response = await on.call(id, kind, name, args);
  const body = response.json<{ value?: unknown; error?: { code: string; message: string } }>();
  return { status: response.status, ...body };
}

async function canaryAlive(): Promise<void> {
  const response = await host.call("canary", "query", "count");
  expect(response.status, response.text()).toBe(200);
  expect(response.json()).toEqual({ value: 3 });
}

// Every attack runs on both transports (see describeOnBothTransports).
describeOnBothTransports((inline) => {
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "platform-sandbox-"));
    host = await startTestHost({
      pool: {
        limits: { cpuMs: 200, wallMs: 2000, memoryMb: 64, resultBytes: 8 * 1024 * 1024 },
        inline,
      },
    });
    expect((await host.deployFixture("canary", "todo")).status).toBe(201);
    for (const text of ["a", "b", "c"]) await host.call("canary", "mutation", "add", { text });
    roomy = await startTestHost({
      pool: {
        limits: { cpuMs: 20_000, wallMs: 60_000, memoryMb: 64, resultBytes: 8 * 1024 * 1024 },
        inline,
      },
    });
  });
  afterAll(async () => {
    await roomy.dispose();
    await host.dispose();
    await rm(scratch, { recursive: true, force: true });
  });

  describe("no way out of the isolate", () => {
    it("1. has no Node globals: process, require, Buffer, module, setTimeout", async () => {
      const id = await deployed(
        queryCapsule(
          `async () => [typeof process, typeof globalThis.require, typeof Buffer, typeof module, typeof setTimeout, typeof globalThis.global, typeof fetch]`,
        ),
      );
      expect((await error(id)).value).toEqual([
        "undefined",
        "undefined",
        "undefined",
        "undefined",
        "undefined",
        "undefined",
        "undefined",
      ]);
      await canaryAlive();
    });

    it("2. cannot reach a Function constructor through constructor chains", async () => {
      const id = await deployed(queryCapsule(`async () => ({}).constructor.constructor("return process")()`));
      expect(await error(id)).toMatchObject({
        status: 500,
        error: {
          code: "handler_error",
          message: "Uncaught EvalError: Code generation from strings is disabled in capsules.",
        },
      });
      await canaryAlive();
    });

    it("3. cannot eval", async () => {
      const id = await deployed(queryCapsule(`async () => (0, eval)("1 + 1")`));
      expect((await error(id)).error?.message).toContain("Code generation from strings is disabled");
    });

    it("4. cannot use Function(...) or async/generator function constructors", async () => {
      const id = await deployed(
        queryCapsule(`async () => {
        const attempts = [
          () => Function("return this")(),
          () => Object.getPrototypeOf(async function () {}).constructor("return 1"),
          () => Object.getPrototypeOf(function* () {}).constructor("yield 1"),
          () => Object.getPrototypeOf(async function* () {}).constructor("yield 1"),
        ];
        return attempts.map((a) => { try { a(); return "ran"; } catch (e) { return e.name; } });
      }`),
      );
      expect((await error(id)).value).toEqual(["EvalError", "EvalError", "EvalError", "EvalError"]);
    });

    it("5. sees no bridge, dispatcher or isolated-vm objects in its global scope", async () => {
      const id = await deployed(
        queryCapsule(`async () => {
        const names = Object.getOwnPropertyNames(globalThis);
        const suspicious = names.filter((n) => /^(__platform_bridge|__platform_dispatch|ivm|Reference|ExternalCopy|Isolate|Context|Script)$/.test(n));
        const leaked = names.filter((n) => { try { const v = globalThis[n]; return v && typeof v === "object" && typeof v.applySync === "function"; } catch { return false; } });
        return { suspicious, leaked };
      }`),
      );
      expect((await error(id)).value).toEqual({ suspicious: [], leaked: [] });
    });

    it("6. prototype pollution stays inside its own isolate", async () => {
      const id = await deployed(
        queryCapsule(
          `async () => { Object.prototype.polluted = "yes"; Array.prototype.push = () => 0; return ({}).polluted; }`,
        ),
      );
      expect((await error(id)).value).toBe("yes");
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      await canaryAlive();
    });
  });

  describe("forged calls and foreign data", () => {
    it("6b. an error code of the capsule's making is handler_error, in its envelope, and no metrics series", async () => {
      // Replacing Object.hasOwn once let the runtime relay any string as the code: each distinct
      // one (1 MiB each) became a metrics series and two log fields, and __proto__ a bare 500.
      const id = await deployed(
        queryCapsule(
          `async (ctx, args) => { throw { name: "PlatformError", code: args.code, message: "forged" }; }`,
          `Object.hasOwn = () => true;\n`,
        ),
      );
      for (const code of ["zz-made-up-code", "__proto__", "toString", "x".repeat(100_000)]) {
        const response = await host.call(id, "query", "q", { code });
        expect(response.status).toBe(500);
        const { error } = response.json<{ error: { code: string; message: string } }>();
        expect(error.code).toBe("handler_error");
        expect(error.message).toMatch(/^Uncaught \{"name":"PlatformError"/);
      }
      const metrics = (await host.admin("/metrics", "GET")).text();
      expect(metrics).toContain(
        `platform_calls_total{deployment="${id}",kind="query",status="handler_error"} 4`,
      );
      expect(metrics).not.toContain("zz-made-up-code");
    });

    it("7. forged syscall arguments through ctx.db get clear errors", async () => {
      const id = await deployed(
        queryCapsule(`async (ctx) => {
        const results = [];
        const tries = [
          () => ctx.db.items.get({ not: "a string" }),
          () => ctx.db.items.withIndex("$user:owner").collect(),
          () => ctx.db.items.withIndex("by_creation", (q) => { q.ops.push({ op: "drop", field: "n", value: 1 }); return q; }).collect(),
          () => ctx.db.items.take(-5),
          () => ctx.db.items.take(1e12),
          () => ctx.db.items.paginate({ cursor: null, numItems: 1e9 }),
          () => ctx.db.items.withIndex("nope").first(),
        ];
        for (const t of tries) { try { await t(); results.push("ok"); } catch (e) { results.push(e.code); } }
        return results;
      }`),
      );
      expect((await error(id)).value).toEqual([
        "bad_request",
        "bad_request",
        "bad_request",
        "bad_request",
        "ok",
        "bad_request",
        "bad_request",
      ]);
      await canaryAlive();
    });

    it("8. a call's request id is the runtime's: neither a patched JSON.stringify nor a toJSON reaches it (found by review)", async () => {
      // Before: the runtime wrote the call with the global JSON.stringify, so a capsule could give
      // its call another running execution's id and have it served in that one's transaction.
      const id = await deployed(
        queryCapsule(`async (ctx) => {
        const real = JSON.stringify;
        let seen = false;
        JSON.stringify = (v, ...rest) => { if (v && typeof v === "object" && "requestId" in v) seen = true; return real({ ...v, requestId: 1000 }, ...rest); };
        Object.prototype.toJSON = function () { return "requestId" in this ? { ...this, requestId: 1000 } : this; };
        try { return [seen, await ctx.db.items.count()]; } catch (e) { return e.code; } finally { JSON.stringify = real; delete Object.prototype.toJSON; }
      }`),
      );
      expect((await error(id)).value).toEqual([false, 0]);
    });

    it("9. a call's op is the runtime's too: a patched JSON.stringify cannot name another (the host refuses unknown ones: host/isolates/syscalls.test.ts)", async () => {
      const id = await deployed(
        queryCapsule(`async (ctx) => {
        const real = JSON.stringify;
        JSON.stringify = (v, ...rest) => (v && typeof v === "object" && "op" in v) ? real({ ...v, op: "v1.fs.read" }, ...rest) : real(v, ...rest);
        try { await ctx.db.items.count(); return "answered"; } catch (e) { return e.message; } finally { JSON.stringify = real; }
      }`),
      );
      expect((await error(id)).value).toBe("answered");
    });

    it("10. a table named like another deployment's sees only its own rows", async () => {
      const id = await deployed(
        `export default capsule({ schema: { todos: table({ text: string() }) }, queries: { q: async (ctx) => ctx.db.todos.count() } });`,
      );
      expect((await error(id)).value).toBe(0);
      await canaryAlive();
    });

    it("11. crafted table names cannot escape the deployment", async () => {
      const id = await deployed(
        queryCapsule(`async (ctx) => {
        const table = ctx.db.items;
        const out = [];
        for (const name of ["todos", "\\u0005canary\\u0000\\u0001\\u0005todos", "../canary/todos"]) {
          try { await Object.getPrototypeOf(Object.getPrototypeOf(table)).collect.call({ executor: table.executor, spec: { table: name, index: "by_creation", range: [], order: "asc" } }); out.push("read"); }
          catch (e) { out.push(e.code); }
        }
        return out;
      }`),
      );
      expect((await error(id)).value).toEqual(["bad_request", "bad_request", "bad_request"]);
    });

    it("12. a cursor from another deployment is refused", async () => {
      const canaryCursor = await deployed(
        `export default capsule({ schema: { todos: table({ text: string() }) }, queries: { q: async (ctx, a) => ctx.db.todos.paginate(a) }, mutations: { add: async (ctx) => { for (let i = 0; i < 3; i++) await ctx.db.todos.insert({ text: "t" + i }); } } });`,
      );
      await host.call(canaryCursor, "mutation", "add");
      const first = (await error(canaryCursor, "query", "q", { cursor: null, numItems: 1 })).value as {
        continueCursor: string;
      };
      const thief = await deployed(
        `export default capsule({ schema: { todos: table({ text: string() }) }, queries: { q: async (ctx, a) => ctx.db.todos.paginate(a) } });`,
      );
      expect(
        (await error(thief, "query", "q", { cursor: first.continueCursor, numItems: 1 })).error?.code,
      ).toBe("invalid_cursor");
    });

    it("13. a ctx kept from an earlier request cannot be used later", async () => {
      const id = await deployed(
        queryCapsule(`async (ctx, args) => {
        if (args.stash) { globalThis.stashed = ctx; return "stashed"; }
        try { await globalThis.stashed.db.items.count(); return "used"; } catch (e) { return e.code; }
      }`),
      );
      expect((await error(id, "query", "q", { stash: true })).value).toBe("stashed");
      expect((await error(id, "query", "q", {})).value).toBe("forbidden");
    });

    it("13b. ctx cannot be rebuilt, re-pointed or changed to act for another request", async () => {
      const id = await deployed(
        queryCapsule(`async (ctx) => {
        const proto = Object.getPrototypeOf(ctx);
        let getter = "ran";
        try { Object.getOwnPropertyDescriptor(proto, "db").get.call({ db: 1 }); } catch (e) { getter = e.name; }
        const { db, auth } = ctx;
        try { ctx.db = {}; } catch {}
        try { Object.defineProperty(ctx, "db", { value: {} }); } catch {}
        return {
          constructor: typeof ctx.constructor,
          frozen: Object.isFrozen(ctx) && Object.isFrozen(proto) && Object.isFrozen(db),
          getter,
          kept: ctx.db === db,
          inherited: [db.constructor, db.toString, db.hasOwnProperty].every((m) => m === undefined),
          destructured: typeof db.items.get === "function" && auth.getIdentity() === null,
        };
      }`),
      );
      expect((await error(id)).value).toEqual({
        constructor: "undefined",
        frozen: true,
        getter: "TypeError",
        kept: true,
        inherited: true,
        destructured: true,
      });
    });
  });

  describe("resource exhaustion", () => {
    it("14. a synchronous infinite loop times out; the next request gets a fresh isolate", async () => {
      const id = await deployed(
        queryCapsule(`async (ctx, args) => { if (args.loop) { for (;;) {} } return "fresh"; }`),
      );
      expect(await error(id, "query", "q", { loop: true })).toMatchObject({
        status: 504,
        error: { code: "timeout" },
      });
      await canaryAlive();
      expect((await error(id)).value).toBe("fresh");
    });

    it("15. an infinite loop after an await is stopped by the CPU watchdog", async () => {
      const id = await deployed(queryCapsule(`async (ctx) => { await ctx.db.items.count(); for (;;) {} }`));
      expect(await error(id)).toMatchObject({ status: 504, error: { code: "timeout" } });
      await canaryAlive();
    });

    it("16. a promise flood (endless microtasks) is stopped", async () => {
      const id = await deployed(queryCapsule(`async () => { for (;;) { await Promise.resolve(); } }`));
      expect((await error(id)).error?.code).toBe("timeout");
      await canaryAlive();
    });

    it("17. deep recursion fails the handler only", async () => {
      const id = await deployed(queryCapsule(`async () => { const f = (n) => f(n + 1) + 1; return f(0); }`));
      expect((await error(id)).error).toMatchObject({
        code: "handler_error",
        message: expect.stringContaining("Maximum call stack size exceeded"),
      });
      await canaryAlive();
    });

    it("18. gradual heap growth hits the memory limit", async () => {
      const id = await deployed(
        queryCapsule(
          `async () => { const keep = []; for (;;) keep.push(new Array(1000000).fill(Math.random())); }`,
        ),
        roomy,
      );
      expect((await error(id, "query", "q", {}, roomy)).error?.code).toBe("out_of_memory");
      await canaryAlive();
    });

    it("20. a giant return value is refused", async () => {
      // Building and copying 12 MiB takes longer than the main host's time limits on a busy machine.
      const id = await deployed(queryCapsule(`async () => "x".repeat(12 * 1024 * 1024)`), roomy);
      const refused = await error(id, "query", "q", {}, roomy);
      expect(refused.status).toBe(413);
      expect(refused.error).toMatchObject({
        code: "too_large",
        message: "The handler's result is larger than 8388608 characters.",
      });
      await canaryAlive();
    });

    it("21. a huge argument is refused before it reaches the isolate", async () => {
      const id = await deployed(queryCapsule(`async (ctx, args) => args.blob.length`));
      const response = await host.call(id, "query", "q", { blob: "x".repeat(2 * 1024 * 1024) });
      expect(response.status).toBe(413);
      expect(response.json<{ error: { code: string } }>().error.code).toBe("too_large");
      await canaryAlive();
    });

    it("21a. a platform call over the size limit is refused before the host copies it, on either transport", async () => {
      const id = await deployed(
        queryCapsule(`async (ctx) => { await ctx.db.items.get("x".repeat(9 * 1024 * 1024)); }`),
        roomy,
      );
      const refused = await error(id, "query", "q", {}, roomy);
      expect(refused.error).toMatchObject({
        code: "too_large",
        message: expect.stringContaining("each call at most"),
      });
      await canaryAlive();
    });

    it("21b. a platform call holding millions of objects is refused before the host parses it", async () => {
      // 8 MiB of [{},{},...]: parsing it held the host's main thread about half a second per call.
      const id = await deployed(
        queryCapsule(
          `async (ctx) => {
            const many = new Array(2_000_000).fill({});
            const under = new Array(${LIMITS.syscallContainers} - 100).fill(1);
            const outcomes = [];
            for (const call of [() => ctx.db.items.get(many), () => ctx.db.items.insert({ n: many })])
              outcomes.push(await call().then(() => "ok", (error) => error.message));
            const fine = await ctx.db.items.get(JSON.stringify(new Array(1000).fill({}))).then(() => "ok", (error) => error.message);
            const nested = await ctx.db.items.insert({ n: under.map(() => []) }).then(() => "ok", (error) => error.message);
            return [...outcomes, fine, nested];
          }`,
        ),
        roomy,
      );
      const [get, insert, fine, nested] = (await error(id, "query", "q", {}, roomy)).value as string[];
      // A get is refused inside the isolate, before the call is made: an id is a string.
      expect(get).toBe("items.get() needs a row id (a string), got an array.");
      expect(insert).toContain(`holds more than ${LIMITS.syscallContainers} objects and arrays`);
      // Under the limit the call is parsed and answered as usual (here: not an id, not a number).
      for (const outcome of [fine, nested]) expect(outcome).not.toContain("objects and arrays");
      await canaryAlive();
    });

    it("21c. JSON with more object members than the host parses is refused before it parses it", async () => {
      // One flat object of 600,000 keys (7 MB) held the host's main thread 0.6 s per platform call,
      // whoever sent it: a capsule's call, a caller's arguments (an endpoint's answer: its head).
      const id = await deployed(
        queryCapsule(
          `async (ctx) => {
            const wide = {};
            for (let i = 0; i < ${LIMITS.jsonMembers} + 10; i++) wide["k" + i] = 1;
            return ctx.db.items.insert({ n: wide }).then(() => "ok", (error) => error.message);
          }`,
          `import { endpoint, text } from "platform/server";`,
        ).replace(
          "queries: {",
          `endpoints: {
            headers: endpoint({ method: "GET", path: "/headers", readOnly: true }, async () => {
              const headers = {};
              for (let i = 0; i < ${LIMITS.endpointResponseHeaders} + 1; i++) headers["x-h" + i] = "v";
              return text("ok", { headers });
            }),
          }, queries: {`,
        ),
        roomy,
      );
      expect((await error(id, "query", "q", {}, roomy)).value).toBe(
        `A database call holds more than ${LIMITS.jsonMembers} object members. Split it, or keep large maps as arrays or text.`,
      );
      const wideArgs = JSON.stringify(
        Object.fromEntries(Array.from({ length: LIMITS.jsonMembers + 1 }, (_, i) => [`a${i}`, 1])),
      );
      const called = await sendRequest(`${roomy.deploymentUrl(id)}/api/query/q`, {
        method: "POST",
        body: wideArgs,
      });
      expect([called.status, called.json()]).toEqual([
        400,
        {
          error: {
            code: "bad_request",
            message: `The request body holds more than ${LIMITS.jsonMembers} object members. Split it, or keep large maps as arrays or text.`,
          },
        },
      ]);
      // Its own headers and the Content-Type text() adds.
      const headers = await sendRequest(`${roomy.deploymentUrl(id)}/headers`);
      expect([headers.status, headers.json()]).toEqual([
        500,
        {
          error: {
            code: "handler_error",
            message: `Endpoint headers returned ${LIMITS.endpointResponseHeaders + 2} headers; an answer has at most ${LIMITS.endpointResponseHeaders}.`,
          },
        },
      ]);
      await canaryAlive();
    });

    it("22. a handler that never resolves hits the wall-clock limit", async () => {
      const id = await deployed(queryCapsule(`async () => new Promise(() => {})`));
      expect((await error(id)).error).toMatchObject({
        code: "timeout",
        message: "The handler did not finish within 2000 ms and was stopped.",
      });
      await canaryAlive();
    });

    it("23. Atomics.wait cannot block the host: no wait, no shared memory to wait on", async () => {
      // A wait under the watchdog's cap blocked the host's main thread without using CPU: 90 ms
      // per call, charged about 1 ms, every other tenant waiting meanwhile.
      const id = await deployed(
        queryCapsule(
          `async () => [typeof Atomics.wait, typeof Atomics.waitAsync, typeof SharedArrayBuffer, typeof globalThis.SharedArrayBuffer, typeof Atomics.load, (() => { try { Atomics.wait(new Int32Array(4), 0, 0, 90); return "returned"; } catch (e) { return e.name; } })()]`,
        ),
      );
      expect((await error(id)).value).toEqual([
        "undefined",
        "undefined",
        "undefined",
        "undefined",
        "function",
        "TypeError",
      ]);
      await canaryAlive();
    });

    it("23b. finds no FinalizationRegistry, WeakRef or WebAssembly, which run or hold memory where no limit reaches", async () => {
      const id = await deployed(
        queryCapsule(
          `async () => [typeof FinalizationRegistry, typeof WeakRef, typeof WebAssembly, typeof globalThis.WebAssembly, Object.getOwnPropertyNames(globalThis).filter((name) => /^(FinalizationRegistry|WeakRef|WebAssembly)$/.test(name))]`,
        ),
      );
      expect((await error(id)).value).toEqual(["undefined", "undefined", "undefined", "undefined", []]);
      // The attacks: a cleanup callback spinning after the call answered, and 2 GiB of wasm memory.
      const spinner = await deployed(
        queryCapsule(
          `async () => { new FinalizationRegistry(() => { for (;;) {} }).register({}, 1); return "registered"; }`,
        ),
      );
      const refused = await error(spinner);
      expect(refused.status).toBe(500);
      expect(refused.error?.message).toContain("FinalizationRegistry is not defined");
      const hoarder = await deployed(
        queryCapsule(
          `async () => { globalThis.kept = new WebAssembly.Memory({ initial: 8192 }); return "kept"; }`,
        ),
      );
      expect((await error(hoarder)).error?.message).toContain("WebAssembly is not defined");
      await canaryAlive();
    });

    it("23c. built-ins V8 cannot stop midway are refused before they start, and no buffer grows outside the heap (found by review)", async () => {
      // Before: each of these one-liners looped in C++ where V8 never checks for termination; the
      // watchdog (inline) or isolated-vm (threaded) then ended the host process for every tenant.
      // And a resizable ArrayBuffer grew 512 MiB a call past the 64 MiB heap limit.
      const cases = {
        includes: "Array.prototype.includes.call({ length: 2 ** 40 }, 1)",
        indexOf: "Array.prototype.indexOf.call({ length: 2 ** 40 }, 1)",
        forEach: "Array.prototype.forEach.call({ length: 2 ** 40 }, () => {})",
        reduce: "Array.prototype.reduce.call({ length: 2 ** 40 }, (a) => a, 0)",
        shift: "Array.prototype.shift.call({ length: 2 ** 40 })",
        sparse: "(() => { const a = []; a[2 ** 32 - 2] = 1; return a.reverse().length; })()",
        concat: "[].concat({ length: 2 ** 32 - 2, [Symbol.isConcatSpreadable]: true }).length",
        resizable: "new ArrayBuffer(1, { maxByteLength: 2 ** 31 }).byteLength",
        chain: "new (new Uint8Array(1).buffer.constructor)(1, { maxByteLength: 2 ** 31 }).byteLength",
        resize: "typeof new ArrayBuffer(8).resize",
        replaceAll: "'ab'.repeat(2 ** 20 + 1).replaceAll('a', 'bb').length",
        replaceFunction: "('x'.repeat(2 ** 21) + 'a').replaceAll('a', () => 'bb').length",
        split: "'ab'.repeat(2 ** 22 + 1).split('a').length",
        match: "'ab'.repeat(2 ** 20 + 1).match(/a/g).length",
        ordinary:
          "[[3, 1, 2].sort(), [1, 2].map((x) => x * 2), [1].concat([2], 3), [1, [2]].flat(), Array.prototype.indexOf.call('abc', 'b'), new ArrayBuffer(4).byteLength, new Uint8Array(2).buffer.constructor === ArrayBuffer, ArrayBuffer.name, [].map.name, [].map.length, [].forEach.call([1], () => {})]",
      };
      const id = await deployed(
        queryCapsule(
          `async (ctx, args) => { const cases = { ${Object.entries(cases)
            .map(([name, code]) => `${name}: () => ${code}`)
            .join(
              ", ",
            )} }; try { return cases[args.c](); } catch (e) { return e.name + ": " + e.message; } }`,
        ),
      );
      const outcome = async (c: string) => (await error(id, "query", "q", { c })).value;
      for (const c of ["includes", "indexOf", "forEach", "reduce", "shift", "sparse"])
        expect(await outcome(c), c).toMatch(
          /^RangeError: Array\.prototype\.\w+ on \d+ elements: capsules may walk at most 8388608/,
        );
      expect(await outcome("concat")).toMatch(/^RangeError: Array\.prototype\.concat on 4294967294 elements/);
      for (const c of ["resizable", "chain"])
        expect(await outcome(c), c).toBe(
          "RangeError: Resizable ArrayBuffers are not available in capsules: their memory is outside the isolate's limit.",
        );
      expect(await outcome("resize")).toBe("undefined");
      // `"ab".repeat(2e7).replaceAll("a", "bb")` held the thread 7.4 s in C++.
      expect(await outcome("replaceAll")).toBe(
        "RangeError: String.prototype.replaceAll on 2097154 characters: capsules may run it over at most 2097152; pass the replacement as a function.",
      );
      expect(await outcome("replaceFunction")).toBe(2 ** 21 + 2);
      expect(await outcome("split")).toMatch(/^RangeError: String\.prototype\.split on 8388610 characters/);
      expect(await outcome("match")).toMatch(/^RangeError: String\.prototype\.match on 2097154 characters/);
      expect(await outcome("ordinary")).toEqual([
        [1, 2, 3],
        [2, 4],
        [1, 2, 3],
        [1, 2],
        1,
        4,
        true,
        "ArrayBuffer",
        "map",
        1,
        null,
      ]);
      await canaryAlive();
    });

    it("23d. array-likes, locale lists and backward searches that looped in C++ are refused or stoppable (found by review)", async () => {
      // Before: each held its isolate's thread in C++ for seconds (typed arrays from array-likes
      // 4.5 s, set over 1e8 holes 9.5 s, apply 3.4 s, a locale list 2.9 s, a built-in callback
      // 2.4 s, a default sort of 2e6 numbers 7.6 s) or for longer than anyone waited
      // (lastIndexOf, String.raw, a locale list of 2 ** 32 - 1; fill over an array-like 8 s), so the
      // host process ended.
      const cases = {
        typedLike: "new Uint8Array({ length: 1e8 }).length",
        typedFrom: "Float64Array.from({ length: 1e8 }).length",
        typedSet: "(() => { const a = []; a[1e7 - 1] = 0; new Uint8Array(1e7).set(a); })()",
        arrayFrom: "Array.from({ length: 2 ** 32 - 1 }).length",
        apply: "Math.max.apply(null, { length: 1e8 })",
        raw: "String.raw({ raw: { length: 1e8 } })",
        locales: "new Intl.NumberFormat({ length: 2 ** 32 - 1 }).format(1)",
        localeString: "(1).toLocaleString({ length: 1e8 })",
        collation: "('A' + '\\u1e0b\\u0323'.repeat(6e5)).localeCompare('a' + '\\u1e0b\\u0323'.repeat(6e5))",
        symbolKey: "Symbol.for('a'.repeat(2 ** 20 + 1))",
        dates:
          "[Date.parse('2020-01-01' + ' '.repeat(2000)), new Date('2020-01-01' + ' '.repeat(2000)).getTime(), Date.parse('1970-01-01T00:00:01Z'), new Date({ valueOf: () => 5 }).getTime()]",
        lastIndexOf: "'a'.repeat(1e6).lastIndexOf('a'.repeat(1e5) + 'b')",
        typedLocale: "new Float64Array(4e6).toLocaleString().length",
        builtinCallback: "new Float64Array(4e6).forEach(new Intl.NumberFormat('en').format)",
        fillLike: "Array.prototype.fill.call({ length: 2 ** 23 }, 1)",
        conversions: "Math.max(...new Array(1000).fill(' '.repeat(2 ** 22) + '1'))",
        callerClimb:
          "(() => { let seen = 'none'; const o = {}; Object.defineProperty(o, 'length', { get: function g() { seen = g.caller === null ? 'null' : 'a function'; return 0; } }); Array.prototype.includes.call(o, 1); return seen; })()",
        defaultSort: "Array.from({ length: 1e6 }, (_, i) => (i * 7919) % 1e6).sort()[0]",
        ordinary:
          "[new Uint8Array([1, 2]).length, Uint8Array.from({ length: 2, 0: 7 })[0], new Uint8Array(new Set([3]))[0], Array.from({ length: 2 }, (_, i) => i), Math.max.apply(null, [1, 4]), String.raw({ raw: ['a', 'b'] }, 1), (1234.5).toLocaleString(['en-US']), 'abcabc'.lastIndexOf('bc'), new Float32Array([1.5, 2]).toLocaleString('en-US')]",
      };
      const capsule = queryCapsule(
        `async (ctx, args) => { const cases = { ${Object.entries(cases)
          .map(([name, code]) => `${name}: () => ${code}`)
          .join(", ")} }; try { return cases[args.c](); } catch (e) { return e.name + ": " + e.message; } }`,
      );
      const id = await deployed(capsule);
      const outcome = async (c: string, on = id) => await error(on, "query", "q", { c });
      const refusals: [string, RegExp][] = [
        ["typedLike", /^RangeError: Uint8Array on 100000000 elements: capsules may walk at most 8388608/],
        ["typedFrom", /^RangeError: TypedArray\.from on 100000000 elements/],
        ["typedSet", /^RangeError: TypedArray\.prototype\.set on 10000000 elements/],
        ["arrayFrom", /^RangeError: Array\.from on 4294967295 elements/],
        [
          "apply",
          /^RangeError: Function\.prototype\.apply on 100000000 elements: capsules may walk at most 1048576/,
        ],
        ["raw", /^RangeError: String\.raw on 100000000 elements/],
        [
          "locales",
          /^RangeError: Intl's list of locales on 4294967295 elements: capsules may walk at most 1024/,
        ],
        ["localeString", /^RangeError: Intl's list of locales on 100000000 elements/],
        [
          "collation",
          /^RangeError: String\.prototype\.localeCompare on 2400002 characters: capsules may run it over at most 2097152/,
        ],
        ["symbolKey", /^RangeError: Symbol\.for on 1048577 characters/],
      ];
      for (const [c, refusal] of refusals) {
        const seen = await outcome(c);
        expect(String(seen.value), `${c}: ${JSON.stringify(seen)}`).toMatch(refusal);
      }
      // The runtime is strict: a capsule's getter called from a bound sees no caller, so it cannot
      // climb to the bound's frame and take the real built-in it holds (found by review).
      expect((await outcome("callerClimb")).value).toBe("null");
      // A date string past 1,024 characters parses as no date (V8's parser held the thread 1.2 s).
      expect((await outcome("dates")).value).toEqual([null, null, 1000, 5]);
      const ordinary = await outcome("ordinary");
      expect(ordinary.value, JSON.stringify(ordinary)).toEqual([
        2,
        7,
        3,
        [0, 1],
        4,
        "a1b",
        "1,234.5",
        4,
        "1.5,2",
      ]);
      // These now run in JavaScript (a built-in callback through a JavaScript function, the
      // default sort order as a JavaScript comparison), so the CPU limit stops them like any loop
      // (each in a deployment of its own: two stops in a row pause one).
      for (const c of [
        "lastIndexOf",
        "typedLocale",
        "builtinCallback",
        "defaultSort",
        "fillLike",
        "conversions",
      ])
        expect((await outcome(c, await deployed(capsule))).error?.code, c).toBe("timeout");
      await canaryAlive();
    });

    it("24. a toJSON that loops forever times out", async () => {
      const id = await deployed(queryCapsule(`async () => ({ toJSON() { for (;;) {} } })`));
      expect((await error(id)).error?.code).toBe("timeout");
      await canaryAlive();
    });
  });

  describe("fair sharing", () => {
    it("24b. a flood of CPU-heavy requests on one deployment does not starve another", async () => {
      const id = await deployed(
        queryCapsule(
          `async (ctx) => { await ctx.db.items.count(); let x = 0; for (let i = 0; i < 3e7; i++) x += i; return x; }`,
        ),
      );
      const flood = Array.from({ length: 80 }, () => host.call(id, "query", "q").catch(() => null));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = Date.now();
      await canaryAlive();
      const canaryMs = Date.now() - started;
      const floodStarted = Date.now();
      await Promise.all(flood);
      const floodMs = Date.now() - floodStarted + 200;
      expect(canaryMs).toBeLessThan(Math.max(1000, floodMs / 4));
    });
  });

  describe("hostile deploys leave the previous version serving", () => {
    it("25. a throw at top level fails the deploy", async () => {
      const id = await deployed(queryCapsule(`async () => "v1"`));
      const dir = join(scratch, id);
      await writeFile(
        join(dir, "server", "index.ts"),
        `${HEADER}throw new Error("top level");\nexport default capsule({ schema: {} });`,
      );
      const response = await host.deployCode(id, (await bundleCapsule(dir)).code);
      expect(response.status).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message).toContain("top level");
      expect((await error(id)).value).toBe("v1");
    });

    it("26. a syntax error, an infinite loop at load, and a forged declaration fail the deploy", async () => {
      const id = await deployed(queryCapsule(`async () => "v1"`));
      const syntax = await host.deployCode(id, "var __platform_capsule = {{{");
      expect(syntax.status).toBe(400);
      expect(syntax.json<{ error: { message: string } }>().error.message).toContain("does not compile");
      const loop = await host.deployCode(id, "for (;;) {}");
      expect(loop.status).toBe(400);
      const forged = await host.deployCode(
        id,
        `var __platform_capsule = { default: { kind: "platform.capsule", definition: {}, declaration: { apiVersion: 1, schema: { tables: {} }, queries: [], mutations: [], endpoints: [{ name: "x", method: "GET", path: "/api/query/steal", readOnly: true }], auth: {} } } };`,
      );
      expect(forged.status).toBe(400);
      expect(forged.json<{ error: { message: string } }>().error.message).toContain(
        "reserved for the platform",
      );
      const noExport = await host.deployCode(id, "var nothing = 1;");
      expect(noExport.json<{ error: { message: string } }>().error.message).toContain(
        "export default capsule",
      );
      expect((await error(id)).value).toBe("v1");
      await canaryAlive();
    });

    it("26b. a capsule() without a schema, or with a table that is not one, fails the deploy saying so", async () => {
      const id = await deployed(queryCapsule(`async () => "v1"`));
      const dir = join(scratch, id);
      for (const [definition, message] of [
        [
          `{ queries: { q: async () => "v2" } }`,
          "capsule({ schema }) needs a schema: an object of tables, as { todos: table({ text: string() }) }, or {} for none.",
        ],
        [
          `{ schema: { items: { n: 1 } } }`,
          "schema.items must be a table: table({ ... }) from platform/server.",
        ],
      ]) {
        await writeFile(
          join(dir, "server", "index.ts"),
          `${HEADER}export default capsule(${definition} as never);`,
        );
        const response = await host.deployCode(id, (await bundleCapsule(dir)).code);
        expect(response.status).toBe(400);
        expect(response.json<{ error: { message: string } }>().error.message).toBe(
          `Deploy failed: The capsule threw while loading: ${message}`,
        );
      }
      expect((await error(id)).value).toBe("v1");
    });

    it("27. a schema migration that fails keeps the old version", async () => {
      const id = await deployed(
        `export default capsule({ schema: { items: table({ n: number() }) }, queries: { q: async () => "v1" }, mutations: { add: async (ctx) => ctx.db.items.insert({ n: 1 }) } });`,
      );
      await host.call(id, "mutation", "add");
      const dir = join(scratch, id);
      await writeFile(
        join(dir, "server", "index.ts"),
        `${HEADER}export default capsule({ schema: { items: table({ n: number(), required: string() }) }, queries: { q: async () => "v2" } });`,
      );
      const response = await host.deployCode(id, (await bundleCapsule(dir)).code);
      expect(response.status).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message).toBe(
        "Deploy failed: Missing value for items.required",
      );
      expect((await error(id)).value).toBe("v1");
    });
  });
});
