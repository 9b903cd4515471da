/**
 * Errors of the call routes that tell the caller what to fix, on a real host over HTTP: a query
 * called as a mutation (and the reverse) says what it is, a mistyped name suggests the nearest
 * one, a method other than POST is `405 method_not_allowed` naming POST, and an oversized result
 * is `413 too_large` (not `429`, which would say "retry later").
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { sendRequest } from "../cli/http.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let scratch: string;

beforeAll(async () => {
  host = await startTestHost({ requestQuota: false });
  scratch = await mkdtemp(join(tmpdir(), "platform-http-errors-"));
  expect((await host.deployFixture("todo", "todo")).status).toBe(201);
});
afterAll(async () => {
  await host.dispose();
  await rm(scratch, { recursive: true, force: true });
});

const envelope = (code: string, message: string) => ({ error: { code, message } });

describe("an unknown query or mutation name", () => {
  it("says when the name is one of the other kind", async () => {
    const asQuery = await host.call("todo", "query", "add", { text: "x" });
    expect([asQuery.status, asQuery.json()]).toEqual([
      404,
      envelope(
        "not_found",
        'No query named "add" in deployment todo: "add" is a mutation (call it at /api/mutation/add).',
      ),
    ]);
    const asMutation = await host.call("todo", "mutation", "list");
    expect([asMutation.status, asMutation.json()]).toEqual([
      404,
      envelope(
        "not_found",
        'No mutation named "list" in deployment todo: "list" is a query (call it at /api/query/list).',
      ),
    ]);
  });

  it("suggests the nearest name of the same kind, and nothing for an unrelated one", async () => {
    const typo = await host.call("todo", "query", "lsit");
    expect([typo.status, typo.json()]).toEqual([
      404,
      envelope("not_found", 'No query named "lsit" in deployment todo. Did you mean "list"?'),
    ]);
    const togle = await host.call("todo", "mutation", "togle");
    expect(togle.json()).toEqual(
      envelope("not_found", 'No mutation named "togle" in deployment todo. Did you mean "toggle"?'),
    );
    // A typo of a name of the other kind: that name, and where it is called.
    const otherKind = await host.call("todo", "mutation", "lst");
    expect(otherKind.json()).toEqual(
      envelope(
        "not_found",
        'No mutation named "lst" in deployment todo. Did you mean the query "list" (at /api/query/list)?',
      ),
    );
    const unrelated = await host.call("todo", "query", "everything");
    expect(unrelated.json()).toEqual(
      envelope("not_found", 'No query named "everything" in deployment todo.'),
    );
  });
});

describe("a paginated query called without its pagination options", () => {
  it("says what paginate() needs and how a caller sends it", async () => {
    expect((await host.deployFixture("pages", "budget")).status).toBe(201);
    const page = await host.call("pages", "query", "page", {});
    expect([page.status, page.json()]).toEqual([
      400,
      envelope(
        "bad_request",
        'paginate() needs { numItems, cursor }, got undefined: pass the paginationOpts argument its caller sends (usePaginatedQuery does; over HTTP send { "paginationOpts": { "numItems": 20, "cursor": null } }).',
      ),
    ]);
    const sent = await host.call("pages", "query", "page", {
      paginationOpts: { numItems: 20, cursor: null },
    });
    expect(sent.status).toBe(200);
  });
});

describe("a call route with another method than POST", () => {
  it("answers 405 method_not_allowed with Allow: POST and the method to use", async () => {
    for (const [method, kind, name] of [
      ["GET", "query", "list"],
      ["PUT", "mutation", "add"],
      ["DELETE", "query", "nope"],
    ] as const) {
      const response = await sendRequest(`${host.deploymentUrl("todo")}/api/${kind}/${name}`, { method });
      expect([method, response.status, response.headers.allow, response.json()]).toEqual([
        method,
        405,
        "POST",
        envelope(
          "method_not_allowed",
          `${method} is not allowed here: call ${kind} ${name} with POST /api/${kind}/${name} and its JSON arguments as the body.`,
        ),
      ]);
    }
    const head = await sendRequest(`${host.deploymentUrl("todo")}/api/query/list`, { method: "HEAD" });
    expect([head.status, head.headers.allow]).toEqual([405, "POST"]);
    // POST still calls it; paths that are no call route keep their 404.
    expect((await host.call("todo", "query", "list")).status).toBe(200);
    const noRoute = await sendRequest(`${host.deploymentUrl("todo")}/api/query`);
    expect([noRoute.status, noRoute.json()]).toEqual([
      404,
      envelope("not_found", "No route for GET /api/query."),
    ]);
  });
});

describe("a result over the result limit", () => {
  it("is 413 too_large, and the deployment keeps answering", async () => {
    const dir = join(scratch, "big");
    await mkdir(join(dir, "server"), { recursive: true });
    await writeFile(
      join(dir, "server", "index.ts"),
      `import { capsule } from "platform/server";\nexport default capsule({ schema: {}, queries: { big: async () => "x".repeat(8 * 1024 * 1024 + 1), small: async () => 1 } });\n`,
    );
    expect((await host.deployCode("big", (await bundleCapsule(dir)).code)).status).toBe(201);
    const big = await host.call("big", "query", "big");
    expect([big.status, big.json()]).toEqual([
      413,
      envelope("too_large", "The handler's result is larger than 8388608 characters."),
    ]);
    expect((await host.call("big", "query", "small")).json()).toEqual({ value: 1 });
  }, 30_000);
});
