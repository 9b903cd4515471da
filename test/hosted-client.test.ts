/**
 * A hosted deployment serves its web client like `platform dev` does: `platform deploy` uploads
 * `client/` and its production build, and the host serves them at the deployment's own origin
 * (types by extension, `nosniff`, ETags, cache rules, GET and HEAD only, `/` is `index.html`, after
 * every platform and endpoint route). The files live in the database: a failed deploy keeps the
 * previous client, a delete removes them, and a second host on the same PostgreSQL serves them too.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import type { HostDatabase } from "../host/db/index.js";
import { postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { runCliAsync } from "./helpers/cli.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost();
});
afterAll(() => host.dispose());

const base64 = (text: string | Buffer) => Buffer.from(text).toString("base64");
const INDEX = '<!doctype html><title>app</title><script type="module" src="/app-3F2K7ABC.js"></script>';

/** Deploys `fixture` as `id` with `client` through the operator API. */
async function deployWithClient(
  target: TestHost,
  id: string,
  client: Array<{ path: string; data: string }> | undefined,
  code?: string,
): Promise<HttpResponse> {
  return target.admin(`/v1/deploys/${id}`, "PUT", {
    code: code ?? (await fixtureCode("todo")),
    ...(client === undefined ? {} : { client }),
  });
}

function get(target: TestHost, id: string, path: string, headers: Record<string, string> = {}) {
  return sendRequest(`${target.deploymentUrl(id)}${path}`, { headers });
}

/** How many client-file and manifest records deployment `id` has in `db`. */
async function storedClientRecords(db: HostDatabase, id: string): Promise<number> {
  const files = await db.records("client-files").listPrefix(`${id}/`);
  const manifests = await db.records("client-manifests").listPrefix(`${id}/`);
  return files.length + manifests.length;
}

describe("platform deploy of an app with client/", () => {
  it("uploads client/ and its build; the deployment serves them at its origin", async () => {
    const deployed = await runCliAsync(
      ["deploy", "fixtures/live-app", "--host", host.url, "--name", "board"],
      {
        PLATFORM_ADMIN_TOKEN: host.adminToken,
        PLATFORM_CONFIG_DIR: join(tmpdir(), "platform-hosted-client-none"),
      },
    );
    expect(deployed.status, deployed.stderr).toBe(0);
    expect(deployed.stdout).toMatch(/client: \d+ files, [\d.]+ KiB/);

    const page = await get(host, "board", "/");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["cache-control"]).toBe("no-cache");
    expect(page.text()).toContain('<script type="module" src="/main.js"></script>');
    expect((await get(host, "board", "/index.html")).text()).toBe(page.text());

    const script = await get(host, "board", "/main.js");
    expect(script.status).toBe(200);
    expect(script.headers["content-type"]).toMatch(/^(text|application)\/javascript; charset=utf-8$/);
    expect(script.headers["cache-control"]).toBe("no-cache");
    // The production build: minified, React in production mode, and no source map: the app's
    // sources are not published with it.
    expect(script.text()).not.toContain("react.development");
    expect(script.text()).not.toContain("sourceMappingURL");
    expect((await get(host, "board", "/main.js.map")).status).toBe(404);
    const etag = script.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await get(host, "board", "/main.js", { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const head = await sendRequest(`${host.deploymentUrl("board")}/main.js`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String(script.body.length));
    expect(head.body.length).toBe(0);

    // Sources, dot-files and what lies outside client/ are not served; nor at the control plane.
    for (const path of [
      "/main.tsx",
      "/tsconfig.json",
      "/../server/index.ts",
      "/%2e%2e/server/index.ts",
      "/client",
    ])
      expect((await get(host, "board", path)).status, path).toBe(404);
    expect((await sendRequest(`${host.url}/main.js`)).status).toBe(404);
    // Only GET and HEAD; platform routes come first.
    const posted = await sendRequest(`${host.deploymentUrl("board")}/index.html`, { method: "POST" });
    expect(posted.status).toBe(404);
    expect(posted.json()).toMatchObject({ error: { code: "not_found" } });
    expect((await get(host, "board", "/api/query/nothing")).status).toBe(405);
    expect((await host.admin("/v1/deploys/board", "GET")).json()).toMatchObject({
      client: { files: expect.any(Number), bytes: expect.any(Number) },
    });
  }, 120_000);
});

describe("client files through the operator API", () => {
  it("caches content-hashed names for a year, folders answer index.html, nothing is listed", async () => {
    const deployed = await deployWithClient(host, "hashed", [
      { path: "index.html", data: base64(INDEX) },
      { path: "app-3F2K7ABC.js", data: base64("console.log(1)") },
      { path: "docs/index.html", data: base64("<p>docs</p>") },
      { path: "logo.svg", data: base64('<svg xmlns="http://www.w3.org/2000/svg"><script>1</script></svg>') },
      { path: "data.unknownext", data: base64("x") },
    ]);
    expect(deployed.status, deployed.text()).toBe(201);
    const hashed = await get(host, "hashed", "/app-3F2K7ABC.js");
    expect(hashed.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect((await get(host, "hashed", "/docs")).text()).toBe("<p>docs</p>");
    expect((await get(host, "hashed", "/docs/")).text()).toBe("<p>docs</p>");
    // The app's own SVG is the app: served as SVG at its own origin, script and all.
    expect((await get(host, "hashed", "/logo.svg")).headers["content-type"]).toBe("image/svg+xml");
    expect((await get(host, "hashed", "/data.unknownext")).headers["content-type"]).toBe(
      "application/octet-stream",
    );
    expect((await get(host, "hashed", "/nope")).status).toBe(404);
  });

  it("cost their address more of its quota the larger they are, as an endpoint's answer does", async () => {
    // One address fetching 8 MiB files in a loop had the host read and send 1 GB a second.
    const limited = await startTestHost({ requestQuota: { perSecond: 0.01, burst: 100 } });
    try {
      const big = Buffer.alloc(4 * 1024 * 1024, "x");
      const deployed = await deployWithClient(limited, "sized", [{ path: "big.bin", data: base64(big) }]);
      expect(deployed.status, deployed.text()).toBe(201);
      // A HEAD and a 304 are answered from the manifest, for one request each.
      const head = await sendRequest(`${limited.deploymentUrl("sized")}/big.bin`, { method: "HEAD" });
      expect([head.status, head.headers["content-length"], head.text()]).toEqual([
        200,
        String(big.length),
        "",
      ]);
      const etag = String(head.headers.etag);
      expect((await get(limited, "sized", "/big.bin", { "if-none-match": etag })).status).toBe(304);
      // 98 requests' worth left: a 4 MiB file costs one, and one more per 64 KiB once answered.
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await get(limited, "sized", "/big.bin")).status);
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await limited.dispose();
    }
  });

  it("swaps the client with the deploy: a failed deploy keeps it, no field keeps it, [] removes it", async () => {
    expect((await deployWithClient(host, "swap", [{ path: "index.html", data: base64("v1") }])).status).toBe(
      201,
    );
    const failed = await deployWithClient(
      host,
      "swap",
      [{ path: "index.html", data: base64("v2") }],
      "export default 1;",
    );
    expect(failed.status).toBe(400);
    expect((await get(host, "swap", "/")).text()).toBe("v1");
    expect((await deployWithClient(host, "swap", undefined)).status).toBe(200);
    expect((await get(host, "swap", "/")).text()).toBe("v1");
    expect((await deployWithClient(host, "swap", [{ path: "index.html", data: base64("v3") }])).status).toBe(
      200,
    );
    expect((await get(host, "swap", "/")).text()).toBe("v3");
    // Only the served version stays stored: one file, one manifest.
    expect(await storedClientRecords(host.database, "swap")).toBe(2);
    expect((await deployWithClient(host, "swap", [])).status).toBe(200);
    expect((await get(host, "swap", "/")).status).toBe(404);
    expect(await storedClientRecords(host.database, "swap")).toBe(0);
  });

  it("refuses what breaks the limits or the rules, naming them", async () => {
    const tooMany = Array.from({ length: LIMITS.clientFiles + 1 }, (_, i) => ({
      path: `f${i}.txt`,
      data: "",
    }));
    const many = await deployWithClient(host, "limits", tooMany);
    expect(many.status).toBe(413);
    expect(many.json()).toMatchObject({
      error: { code: "too_large", message: expect.stringContaining("LIMITS.clientFiles") },
    });
    const big = await deployWithClient(host, "limits", [
      { path: "big.bin", data: Buffer.alloc(LIMITS.clientFileBytes + 3).toString("base64") },
    ]);
    expect(big.status).toBe(413);
    expect(big.json()).toMatchObject({
      error: { message: expect.stringContaining("LIMITS.clientFileBytes") },
    });
    const elf = await deployWithClient(host, "limits", [
      { path: "tool", data: Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]).toString("base64") },
    ]);
    expect(elf.status).toBe(415);
    expect(elf.json()).toMatchObject({ error: { code: "blocked_type" } });
    for (const path of ["../x", "a//b", "./a", "a\\b", "api/x", "storage.html", "__platform/x", ""]) {
      const refused = await deployWithClient(host, "limits", [{ path, data: "" }]);
      expect(refused.status, path).toBe(400);
    }
    const notBase64 = await deployWithClient(host, "limits", [{ path: "a", data: "!!!!" }]);
    expect(notBase64.status).toBe(400);
    expect((await host.admin("/v1/deploys/limits", "GET")).status).toBe(404);
  });

  it("refuses a client whose paths pass LIMITS.clientPathChars together, at deploy; one at it is served", async () => {
    // 512 paths of 512 characters past Latin-1 (each within checkClientPath): exactly the limit.
    const client = Array.from({ length: 512 }, (_, i) => ({
      path: `${String(i).padStart(3, "0")}/${"ü".repeat(254)}/${"ü".repeat(253)}`,
      data: "",
    }));
    expect(client.reduce((sum, file) => sum + file.path.length, 0)).toBe(LIMITS.clientPathChars);
    const over = [...client.slice(1), { path: `${client[0]?.path}x`, data: "" }];
    const refused = await deployWithClient(host, "paths", over);
    expect(refused.status).toBe(413);
    expect(refused.json()).toMatchObject({
      error: { code: "too_large", message: expect.stringContaining("LIMITS.clientPathChars") },
    });
    expect((await host.admin("/v1/deploys/paths", "GET")).status).toBe(404);
    expect((await deployWithClient(host, "paths", client)).status).toBe(201);
    expect((await get(host, "paths", `/${encodeURI(client[511]?.path ?? "")}`)).status).toBe(200);
  });

  it("the next deploy removes what a deploy that crashed before its switch left, with or without a client", async () => {
    expect(
      (await deployWithClient(host, "crashed", [{ path: "index.html", data: base64("v1") }])).status,
    ).toBe(201);
    // What a crashed deploy leaves, written as it writes it: a version's file and manifest, and a
    // file of a version whose manifest was never stored.
    const files = host.database.records<{ data: string }>("client-files");
    const manifests = host.database.records<{ files: unknown[] }>("client-manifests");
    const leftover = "a".repeat(64);
    await files.put(`crashed/${leftover}`, { data: base64("left") });
    await files.put(`crashed/${"b".repeat(64)}`, { data: base64("orphan") });
    await manifests.put(`crashed/${"c".repeat(64)}`, {
      files: [{ path: "index.html", hash: leftover, size: 4 }],
    });
    expect(await storedClientRecords(host.database, "crashed")).toBe(5);
    expect((await deployWithClient(host, "crashed", undefined)).status).toBe(200);
    expect(await storedClientRecords(host.database, "crashed")).toBe(2);
    expect((await get(host, "crashed", "/")).text()).toBe("v1");
    await files.put(`crashed/${leftover}`, { data: base64("left") });
    expect(
      (await deployWithClient(host, "crashed", [{ path: "index.html", data: base64("v2") }])).status,
    ).toBe(200);
    expect(await storedClientRecords(host.database, "crashed")).toBe(2);
    expect((await get(host, "crashed", "/")).text()).toBe("v2");
  });

  it("are deleted with the deployment", async () => {
    expect((await deployWithClient(host, "gone", [{ path: "index.html", data: base64("bye") }])).status).toBe(
      201,
    );
    expect(await storedClientRecords(host.database, "gone")).toBe(2);
    expect((await host.admin("/v1/deploys/gone", "DELETE")).status).toBe(204);
    expect(await storedClientRecords(host.database, "gone")).toBe(0);
    expect((await deployWithClient(host, "gone", undefined)).status).toBe(201);
    expect((await get(host, "gone", "/")).status).toBe(404);
  });
});

describe.skipIf(postgresBinDir() === undefined)("on PostgreSQL, shared by two hosts", () => {
  it("both hosts serve the deployed client, and the new one after a redeploy", async () => {
    const server = await startLocalPostgres();
    const a = await startTestHost({ database: server.url });
    const b = await startTestHost({ database: server.url });
    try {
      expect(
        (await deployWithClient(a, "shared", [{ path: "index.html", data: base64("one") }])).status,
      ).toBe(201);
      expect((await get(b, "shared", "/")).text()).toBe("one");
      expect(
        (await deployWithClient(a, "shared", [{ path: "index.html", data: base64("two") }])).status,
      ).toBe(200);
      // Host b serves the old version from memory until a's word of the redeploy reaches it (a
      // PostgreSQL notification, which a busy machine delays), then the new one; never nothing.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const served = await get(b, "shared", "/");
        expect([served.status, ["one", "two"].includes(served.text())]).toEqual([200, true]);
        if (served.text() === "two" || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect((await get(b, "shared", "/")).text()).toBe("two");
    } finally {
      await a.dispose();
      await b.dispose();
      await server.stop();
    }
  }, 90_000);
});
