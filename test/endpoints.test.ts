/** Custom endpoints end to end: request readers, response helpers, read-only and writing handlers, deploy checks. */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
const url = (path: string) => `${host.deploymentUrl("ep")}${path}`;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("ep", "endpoints")).status).toBe(201);
});
afterAll(() => host.dispose());

describe("custom endpoints", () => {
  it("read headers, query, text and bytes; answer with status and headers", async () => {
    const response = await sendRequest(url("/echo?q=one&q=two"), {
      method: "POST",
      headers: { "x-custom": "Value" },
      body: Buffer.from([0xff, 0x61, 0x62]),
    });
    expect(response.status).toBe(201);
    expect(response.headers["x-echo"]).toBe("yes");
    expect(response.headers["content-type"]).toContain("application/json");
    expect(response.json()).toMatchObject({
      method: "POST",
      path: "/echo",
      header: "Value",
      missingHeader: null,
      q: "one",
      missingQuery: null,
      byteLength: 3,
      firstByte: 255,
    });
    const hello = await sendRequest(url("/hello"));
    expect([hello.status, hello.text(), hello.headers["x-kind"]]).toEqual([202, "hello", "text"]);
  });

  it("json() parses bodies and refuses bad JSON clearly", async () => {
    expect((await sendRequest(url("/parse"), { method: "POST", body: '{"a":[1,2]}' })).json()).toEqual({
      a: [1, 2],
    });
    const bad = await sendRequest(url("/parse"), { method: "POST", body: "{nope" });
    expect(bad.status).toBe(400);
    expect(bad.json()).toEqual({
      error: { code: "bad_request", message: "The request body is not valid JSON." },
    });
  });

  it("refuses a handler that returns something other than json() or text()", async () => {
    const response = await sendRequest(url("/wrong"));
    expect(response.status).toBe(500);
    expect(response.json()).toEqual({
      error: {
        code: "handler_error",
        message: "Endpoint wrong must return json(...) or text(...) from platform/server.",
      },
    });
  });

  it("runs readOnly endpoints as queries (writes fail) and the others as one rolled-back-on-throw transaction", async () => {
    const sneaky = await sendRequest(url("/sneaky"), { method: "POST" });
    expect(sneaky.status).toBe(403);
    expect((await sendRequest(url("/write?n=5"), { method: "POST" })).json()).toEqual({ n: 5 });
    const failed = await sendRequest(url("/write?n=6&fail=1"), { method: "POST" });
    expect(failed.json()).toEqual({
      error: { code: "handler_error", message: "Uncaught Error: rolled back" },
    });
    expect((await host.call("ep", "query", "count")).json()).toEqual({ value: 1 });
    // An answer the platform cannot send rolls the writes back too: its head is checked inside
    // the transaction (it committed before, then failed).
    const badStatus = await sendRequest(url("/write?n=7&status=99"), { method: "POST" });
    expect([badStatus.status, badStatus.json<{ error: { message: string } }>().error.message]).toEqual([
      500,
      "Endpoint write returned an invalid status 99; a status is a whole number from 200 to 599.",
    ]);
    const badHeader = await sendRequest(url("/write?n=8&header=1"), { method: "POST" });
    expect(badHeader.json<{ error: { message: string } }>().error.message).toContain('"bad name"');
    expect((await host.call("ep", "query", "count")).json()).toEqual({ value: 1 });
  });

  it("reads headers from the object the handler returned, never from what its toJSON says", async () => {
    const response = await sendRequest(url("/disguised"));
    expect([response.status, response.text()]).toEqual([200, "hi"]);
  });

  it("hands a handler 1 MiB of any bytes whole, its text decoded as Node decodes UTF-8", async () => {
    // The body crosses into the isolate as base64 alone and is decoded there, on the tenant's CPU:
    // as JSON text beside it, 1 MiB of control characters was 7.7 MB for the host to encode.
    const body = randomBytes(1024 * 1024);
    body.fill(1, 0, 300_000);
    body.set([0xf0, 0x9f, 0x98, 0x80, 0xed, 0xa0, 0x80, 0xc3], 300_000);
    const response = await sendRequest(url("/mirror"), { method: "POST", body });
    expect(response.status).toBe(200);
    let hash = 0x811c9dc5;
    for (const byte of body) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
    expect(response.headers["x-bytes"]).toBe(String(body.length));
    expect(response.headers["x-fnv"]).toBe(String(hash));
    // Each bytes() is a copy: the handler zeroed the first one.
    expect(response.headers["x-same"]).toBe(String(body[0]));
    expect(response.body.equals(Buffer.from(body.toString("utf8")))).toBe(true);
  });

  it("answers a body as the handler built it: control characters count once against the result limit", async () => {
    // The body leaves the isolate as it is, beside its head's JSON: JSON-encoded, 2 Mi control
    // characters were 12 Mi characters, past the 8 MiB result limit, and parsed on the main thread.
    const n = 2 * 1024 * 1024;
    const response = await sendRequest(url(`/repeat?code=1&n=${n}`));
    expect(response.status).toBe(200);
    expect(response.body.equals(Buffer.alloc(n, 1))).toBe(true);
    const lines = await sendRequest(url(`/repeat?code=10&n=1000`));
    expect(lines.text()).toBe("\n".repeat(1000));
    const over = await sendRequest(url(`/repeat?code=97&n=${LIMITS.resultBytes}`));
    expect([over.status, over.json<{ error: { code: string } }>().error.code]).toEqual([413, "too_large"]);
  });

  it("limits request bodies, answers unknown routes with 404 and other methods of a declared path with 405", async () => {
    const big = await sendRequest(url("/echo"), { method: "POST", body: Buffer.alloc(1024 * 1024 + 1) });
    expect(big.status).toBe(413);
    // A declared path asked with another method says which it answers.
    const post = await sendRequest(url("/hello"), { method: "POST" });
    expect([post.status, post.headers.allow, post.json()]).toEqual([
      405,
      "GET",
      { error: { code: "method_not_allowed", message: "/hello answers GET, not POST." } },
    ]);
    expect((await sendRequest(url("/nowhere"))).status).toBe(404);
  });
});

describe("deploy checks of endpoint routes", () => {
  it("refuses paths reserved for the platform and duplicate routes, naming them", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-routes-"));
    await mkdir(join(dir, "server"));
    const attempt = async (endpoints: string) => {
      await writeFile(
        join(dir, "server", "index.ts"),
        `import { capsule, endpoint, text } from "platform/server";\nexport default capsule({ schema: {}, endpoints: { ${endpoints} } });\n`,
      );
      return host.deployCode("routes", (await bundleCapsule(dir)).code);
    };
    for (const path of ["/api/query/x", "/storage", "/storage/public/x", "/__platform/auth/guest"]) {
      const response = await attempt(
        `a: endpoint({ method: "GET", path: "${path}", readOnly: true }, async () => text("x"))`,
      );
      expect(response.status, path).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message).toContain(
        "reserved for the platform",
      );
    }
    const duplicate = await attempt(
      `a: endpoint({ method: "GET", path: "/x", readOnly: true }, async () => text("a")), b: endpoint({ method: "get", path: "/x", readOnly: true }, async () => text("b"))`,
    );
    expect(duplicate.json<{ error: { message: string } }>().error.message).toBe(
      "Deploy failed: Two endpoints are declared for GET /x.",
    );
    // Paths no request reaches as written (a request's path is ASCII, escapes stay escaped), or
    // that proxies would hand elsewhere (`//storage/...` merged to a platform route).
    for (const path of ["/caf\u00e9", "/a%20b", "//storage/public/x", "/./x", "/a/..", "/a//b"]) {
      const response = await attempt(
        `a: endpoint({ method: "GET", path: ${JSON.stringify(path)}, readOnly: true }, async () => text("x"))`,
      );
      expect(response.status, path).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message, path).toContain(
        "has a path no request can reach as written",
      );
    }
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses more queries, mutations and endpoints than a capsule may declare, before a call pays for them", async () => {
    // A call looks its handler up among them, and a miss looks for the nearest name: 120,000
    // names held the host's main thread 10 s on every call of a name the capsule lacked.
    const dir = await mkdtemp(join(tmpdir(), "platform-many-"));
    try {
      await mkdir(join(dir, "server"));
      const declare = async (count: number) => {
        const queries = Array.from({ length: count }, (_, i) => `q${i}: async () => ${i}`).join(",\n");
        await writeFile(
          join(dir, "server", "index.ts"),
          `import { capsule } from "platform/server";\nexport default capsule({ schema: {}, queries: {\n${queries}\n} });\n`,
        );
        return host.deployCode("many", (await bundleCapsule(dir)).code);
      };
      const refused = await declare(LIMITS.functionsPerCapsule + 1);
      expect(refused.status).toBe(400);
      expect(refused.json<{ error: { message: string } }>().error.message).toContain(
        `a capsule may declare ${LIMITS.functionsPerCapsule} together`,
      );
      expect((await declare(LIMITS.functionsPerCapsule)).status).toBe(201);
      const miss = await host.call("many", "query", "q99999");
      expect(miss.status).toBe(404);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
