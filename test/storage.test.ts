/**
 * Object storage over real HTTP: every row of the storage error table (docs/http-api.md), every access rule,
 * the download headers, multipart uploads, idempotent deletes, owner and inspect routes, the
 * newest-N listing window and the per-developer quota under concurrency.
 */

import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpResponse, localhostLookup, sendRequest } from "../cli/http.js";
import { MARKUP_RULES_VERSION } from "../host/storage/markup-script.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let owner: { id: string; token: string };
let other: { id: string; token: string };
let claimToken: string;
const tokens: Record<string, Record<string, string>> = {};
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(200, 7),
]);

beforeAll(async () => {
  host = await startTestHost({ storageLimits: { listing: 3 } });
  owner = (await host.admin("/v1/developers", "POST", { name: "owner" })).json();
  other = (await host.admin("/v1/developers", "POST", { name: "other" })).json();
  const plain = await fixtureCode("access");
  for (const [id, code, owned] of [
    ["open", plain, true],
    ["signin", await fixtureCode("access-signin"), true],
    ["locked", plain, true],
    ["unclaimed", plain, false],
    ["listing", plain, true],
  ] as const) {
    const created = await host.admin("/v1/deploys", "POST", {
      id,
      code,
      ...(owned ? { owner: owner.id } : {}),
    });
    expect(created.status).toBe(201);
    if (!owned) claimToken = created.json<{ claimToken: string }>().claimToken;
    tokens[id] = {
      guest: (await sendRequest(`${host.deploymentUrl(id)}/__platform/auth/guest`, { method: "POST" })).json<{
        token: string;
      }>().token,
      account: (
        await host.admin(`/v1/deploys/${id}/sessions`, "POST", { email: "member@example.com" })
      ).json<{
        token: string;
      }>().token,
      approved: (
        await host.admin(`/v1/deploys/${id}/sessions`, "POST", { email: "approved@example.com" })
      ).json<{
        token: string;
      }>().token,
    };
  }
  await host.admin("/v1/deploys/locked", "PATCH", { restricted: true, approved: ["approved@example.com"] });
});
afterAll(() => host.dispose());

function upload(
  id: string,
  body: Buffer,
  options: { token?: string | undefined; type?: string; isPublic?: boolean; query?: string } = {},
) {
  const query = [options.isPublic ? "public=true" : "", options.query ?? ""].filter(Boolean).join("&");
  return sendRequest(`${host.deploymentUrl(id)}/storage${query ? `?${query}` : ""}`, {
    method: "POST",
    headers: {
      "content-type": options.type ?? "image/png",
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
    body,
  });
}

const download = (id: string, key: string, token?: string) =>
  sendRequest(`${host.deploymentUrl(id)}/storage/${key}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });

const code = (response: HttpResponse) => [
  response.status,
  response.status >= 400 ? response.json<{ error: { code: string } }>().error.code : "ok",
];

describe("uploads", () => {
  it("stores a public file and serves it to anyone on an open app, with the safety headers", async () => {
    const response = await upload("open", PNG, { token: tokens.open?.account, isPublic: true });
    expect(response.status).toBe(201);
    const record = response.json<{ key: string; url: string; size: number; contentType: string }>();
    expect(record).toMatchObject({ size: PNG.length, contentType: "image/png" });
    expect(record.key).toMatch(/^public\/[A-Za-z0-9_-]{22}$/);
    expect(record.url).toBe(`${host.deploymentUrl("open")}/storage/${record.key}`);
    const fetched = await sendRequest(record.url);
    expect(fetched.status).toBe(200);
    expect(fetched.body.equals(PNG)).toBe(true);
    expect(fetched.headers).toMatchObject({
      "cache-control": "public, max-age=3600",
      "x-content-type-options": "nosniff",
      "content-type": "image/png",
      "referrer-policy": "no-referrer",
    });
    expect(fetched.headers["content-security-policy"]).toContain("sandbox");
    // A HEAD is answered from the record, with the same headers and no body.
    const head = await new Promise<{ status: number; headers: Record<string, unknown>; bytes: number }>(
      (resolve, reject) => {
        const sent = request(record.url, { method: "HEAD", lookup: localhostLookup }, (res) => {
          let bytes = 0;
          res.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes }));
        });
        sent.on("error", reject);
        sent.end();
      },
    );
    expect(head).toMatchObject({
      status: 200,
      bytes: 0,
      headers: {
        "content-length": String(PNG.length),
        "content-type": "image/png",
        "x-content-type-options": "nosniff",
      },
    });
  });

  it("keeps files private by default: a signed-in account of the same deployment only", async () => {
    const key = (await upload("open", PNG, { token: tokens.open?.account })).json<{ key: string }>().key;
    expect(key).toMatch(/^private\//);
    expect(code(await download("open", key))).toEqual([401, "unauthorized"]);
    expect(code(await download("open", key, tokens.open?.guest))).toEqual([403, "forbidden"]);
    expect(code(await download("open", key, tokens.signin?.account))).toEqual([401, "unauthorized"]);
    const ok = await download("open", key, tokens.open?.account);
    expect([ok.status, ok.headers["cache-control"]]).toEqual([200, "private, no-store"]);
    const viaQuery = await sendRequest(
      `${host.deploymentUrl("open")}/storage/${key}?platform_token=${tokens.open?.account}`,
    );
    expect(viaQuery.status).toBe(200);
  });

  it("refuses guests, anonymous callers and unclaimed deployments", async () => {
    expect(code(await upload("open", PNG, { token: tokens.open?.guest }))).toEqual([403, "forbidden"]);
    expect(code(await upload("open", PNG))).toEqual([401, "unauthorized"]);
    expect(code(await upload("unclaimed", PNG, { token: tokens.unclaimed?.account }))).toEqual([
      403,
      "forbidden",
    ]);
  });

  it("answers 413 too_large above 5 MiB and accepts exactly 5 MiB", async () => {
    const limit = 5 * 1024 * 1024;
    expect(
      code(
        await upload("open", Buffer.alloc(limit + 1, 1), {
          token: tokens.open?.account,
          type: "application/octet-stream",
        }),
      ),
    ).toEqual([413, "too_large"]);
    expect(
      (
        await upload("open", Buffer.alloc(limit, 1), {
          token: tokens.open?.account,
          type: "application/octet-stream",
        })
      ).status,
    ).toBe(201);
  });

  it("answers 415 blocked_type by declared type and by content", async () => {
    expect(
      code(
        await upload("open", Buffer.from("hello"), {
          token: tokens.open?.account,
          type: "text/html; charset=utf-8",
        }),
      ),
    ).toEqual([415, "blocked_type"]);
    expect(
      code(
        await upload("open", Buffer.from("x"), {
          token: tokens.open?.account,
          type: "application/x-msdownload",
        }),
      ),
    ).toEqual([415, "blocked_type"]);
    const pe = Buffer.concat([Buffer.from("MZ"), Buffer.alloc(100)]);
    expect(code(await upload("open", pe, { token: tokens.open?.account, type: "image/png" }))).toEqual([
      415,
      "blocked_type",
    ]);
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>');
    const stored = await upload("open", svg, { token: tokens.open?.account, type: "image/svg+xml" });
    expect(stored.status).toBe(201);
    // The record keeps the rules the bytes passed: a download serves it without checking again
    // (a check of a 5 MB file takes the main thread up to 200 ms).
    const record = await host.database
      .records<{ markupRules?: number }>("objects")
      .get(`open/${stored.json<{ key: string }>().key}`);
    expect(record?.markupRules).toBe(MARKUP_RULES_VERSION);
  });

  it("stores a Content-Type as its sender wrote it, and refuses one holding control characters, which reached developers' terminals", async () => {
    const token = tokens.open?.account;
    const typeOf = (response: HttpResponse) => response.json<{ contentType: string }>().contentType;
    // Node reads a header's bytes one character each: UTF-8 is read back as UTF-8, tabs as spaces.
    const utf8 = (text: string) => Buffer.from(text, "utf8").toString("latin1");
    const csv = await upload("open", Buffer.from("a,b\n"), {
      token,
      type: utf8('text/csv;\tname="отчёт.csv"'),
    });
    expect([csv.status, typeOf(csv)]).toEqual([201, 'text/csv; name="отчёт.csv"']);
    // U+009B, a terminal's one-byte escape prefix, sent in UTF-8: refused.
    const escapePrefix = await upload("open", PNG, { token, type: utf8("image/png\u009b[2K") });
    expect(code(escapePrefix)).toEqual([400, "bad_request"]);
    expect(escapePrefix.json<{ error: { message: string } }>().error.message).toContain(
      "must not hold control characters",
    );
    // A lone 0x9B byte, which Node's header checks let through, is not UTF-8: stored as U+FFFD.
    const lone = await upload("open", PNG, { token, type: "image/png\x9b[2K" });
    expect([lone.status, typeOf(lone)]).toEqual([201, "image/png\ufffd[2K"]);
    const long = await upload("open", PNG, { token, type: `image/${"x".repeat(300)}` });
    expect(code(long)).toEqual([400, "bad_request"]);
  });

  it("accepts a multipart form with one file part, and refuses two", async () => {
    const boundary = "----platformtest";
    const part = (name: string, type: string, body: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.txt"\r\nContent-Type: ${type}\r\n\r\n${body}\r\n`;
    const send = (body: string) =>
      sendRequest(`${host.deploymentUrl("open")}/storage`, {
        method: "POST",
        headers: {
          "content-type": `multipart/form-data; boundary=${boundary}`,
          authorization: `Bearer ${tokens.open?.account}`,
        },
        body,
      });
    const one = await send(`${part("file", "text/plain", "hello form")}--${boundary}--\r\n`);
    expect(one.status).toBe(201);
    expect(one.json()).toMatchObject({ size: 10, contentType: "text/plain" });
    const two = await send(
      `${part("a", "text/plain", "1")}${part("b", "text/plain", "2")}--${boundary}--\r\n`,
    );
    expect(code(two)).toEqual([400, "invalid_request"]);
    // A file among 1,000 empty fields: not read past its 22 parts (each part's headers cost the
    // main thread; 1.3 million of them held it 4.5 s an upload).
    const field = (i: number) => `--${boundary}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\n\r\n`;
    const crowded = await send(
      `${part("file", "text/plain", "hello")}${Array.from({ length: 1000 }, (_, i) => field(i)).join("")}--${boundary}--\r\n`,
    );
    expect(code(crowded)).toEqual([400, "invalid_request"]);
    expect(crowded.json<{ error: { message: string } }>().error.message).toBe(
      "A multipart upload carries one file part and at most 20 other fields.",
    );
    // Twenty fields beside the file are still a form.
    const fields = await send(
      `${Array.from({ length: 20 }, (_, i) => field(i)).join("")}${part("file", "text/plain", "hello")}--${boundary}--\r\n`,
    );
    expect(fields.status).toBe(201);
  });
});

describe("read policies", () => {
  it("requireSignIn applies to public files too", async () => {
    const key = (await upload("signin", PNG, { token: tokens.signin?.account, isPublic: true })).json<{
      key: string;
    }>().key;
    expect(code(await download("signin", key))).toEqual([401, "unauthorized"]);
    const ok = await download("signin", key, tokens.signin?.account);
    expect([ok.status, ok.headers["cache-control"]]).toEqual([200, "private, no-store"]);
  });

  it("restricted deployments admit approved accounts only", async () => {
    expect(code(await upload("locked", PNG, { token: tokens.locked?.account, isPublic: true }))).toEqual([
      403,
      "forbidden",
    ]);
    const key = (await upload("locked", PNG, { token: tokens.locked?.approved, isPublic: true })).json<{
      key: string;
    }>().key;
    expect(code(await download("locked", key))).toEqual([401, "unauthorized"]);
    expect(code(await download("locked", key, tokens.locked?.account))).toEqual([403, "forbidden"]);
    expect((await download("locked", key, tokens.locked?.approved)).status).toBe(200);
  });

  it("answers 404 not_found for missing objects and malformed paths", async () => {
    expect(code(await download("open", "public/AAAAAAAAAAAAAAAAAAAAAA"))).toEqual([404, "not_found"]);
    expect(code(await download("open", "other/AAAAAAAAAAAAAAAAAAAAAA"))).toEqual([404, "not_found"]);
    expect(code(await download("open", "public/..%2F..%2Fetc"))).toEqual([404, "not_found"]);
  });
});

describe("deletes, owner and inspect routes", () => {
  it("lets the uploader delete, idempotently; others are refused", async () => {
    const key = (await upload("open", PNG, { token: tokens.open?.account, isPublic: true })).json<{
      key: string;
    }>().key;
    const del = (token?: string) =>
      sendRequest(`${host.deploymentUrl("open")}/storage/${key}`, {
        method: "DELETE",
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
    expect(code(await del(tokens.open?.guest))).toEqual([403, "forbidden"]);
    expect(code(await del(tokens.open?.approved))).toEqual([403, "forbidden"]);
    expect(code(await del())).toEqual([401, "unauthorized"]);
    expect((await del(tokens.open?.account)).status).toBe(204);
    expect(code(await download("open", key))).toEqual([404, "not_found"]);
    expect((await del(tokens.open?.account)).status).toBe(204);
  });

  it("lets the owner delete any uploader's file through /v1/me", async () => {
    const key = (await upload("open", PNG, { token: tokens.open?.account, isPublic: true })).json<{
      key: string;
    }>().key;
    expect(
      (await host.admin(`/v1/me/deploys/open/storage/${key}`, "DELETE", undefined, other.token)).status,
    ).toBe(403);
    expect(
      (await host.admin(`/v1/me/deploys/open/storage/${key}`, "DELETE", undefined, owner.token)).status,
    ).toBe(204);
    expect(code(await download("open", key))).toEqual([404, "not_found"]);
  });

  it("lists the newest files (the window) with uploader emails for credentialed callers only", async () => {
    for (let i = 0; i < 5; i++)
      await upload("listing", Buffer.from(`file ${i}`), {
        token: tokens.listing?.account,
        type: "text/plain",
      });
    const inspect = (token?: string, id = "listing") =>
      sendRequest(`${host.deploymentUrl(id)}/__platform/storage`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
    expect(code(await inspect())).toEqual([401, "unauthorized"]);
    expect(code(await inspect(tokens.listing?.account))).toEqual([403, "forbidden"]);
    expect(code(await inspect(other.token))).toEqual([403, "forbidden"]);
    const listing = (await inspect(owner.token)).json<{
      objects: Array<{ uploaderEmail: string; size: number }>;
      totals: { count: number; bytes: number };
      truncated: boolean;
    }>();
    expect(listing.objects).toHaveLength(3);
    expect(listing.objects[0]).toMatchObject({ uploaderEmail: "member@example.com", size: 6 });
    expect(listing.totals).toEqual({ count: 5, bytes: 30 });
    expect(listing.truncated).toBe(true);
    const asOperator = await inspect(host.adminToken);
    expect(asOperator.status).toBe(200);
    // It names uploaders' emails: no cache keeps it.
    expect(asOperator.headers["cache-control"]).toBe("no-store");
    expect((await inspect(claimToken, "unclaimed")).status).toBe(200);
    // Its tokens go in the header only: in a URL they reach proxies' logs, and at a tenant's origin
    // that tenant's service worker (a review).
    const inQuery = await sendRequest(
      `${host.deploymentUrl("listing")}/__platform/storage?platform_token=${encodeURIComponent(host.adminToken)}`,
    );
    expect(code(inQuery)).toEqual([401, "unauthorized"]);
  });

  it("answers an upload's URL with the scheme the client reached the host by, behind a trusted proxy", async () => {
    // Behind a TLS proxy the URL said http://: a public URL is a read credential, and the client's
    // authorizedUrl() did not recognise its own origin in it (a review).
    const proxied = await startTestHost({ trustProxy: true });
    try {
      const dev = (await proxied.admin("/v1/developers", "POST", { name: "dev" })).json<{ id: string }>();
      const created = await proxied.admin("/v1/deploys", "POST", {
        id: "files",
        code: await fixtureCode("access"),
        owner: dev.id,
      });
      expect(created.status).toBe(201);
      const account = (
        await proxied.admin("/v1/deploys/files/sessions", "POST", { email: "member@example.com" })
      ).json<{ token: string }>().token;
      const send = (headers: Record<string, string>) =>
        sendRequest(`${proxied.deploymentUrl("files")}/storage`, {
          method: "POST",
          headers: { "content-type": "image/png", authorization: `Bearer ${account}`, ...headers },
          body: PNG,
        });
      const sent = await send({ "x-forwarded-proto": "https" });
      expect(sent.status, sent.text()).toBe(201);
      const overTls = sent.json<{ url: string; key: string }>();
      expect(overTls.url).toBe(
        `${proxied.deploymentUrl("files").replace("http:", "https:")}/storage/${overTls.key}`,
      );
      const plain = (await send({})).json<{ url: string; key: string }>();
      expect(plain.url).toBe(`${proxied.deploymentUrl("files")}/storage/${plain.key}`);
    } finally {
      await proxied.dispose();
    }
    // Without a trusted proxy the header is the client's own word, and is not taken.
    const direct = await upload("open", PNG, { token: tokens.open?.account });
    expect(direct.json<{ url: string }>().url.startsWith("http://")).toBe(true);
  });
});

describe("quota", () => {
  it("lets exactly what fits through when many uploads race for the last bytes, and deletes free space", async () => {
    const small = await startTestHost({ storageLimits: { perDeveloper: 100_000 } });
    try {
      const dev = (
        await sendRequest(`${small.url}/v1/developers`, {
          method: "POST",
          headers: { authorization: `Bearer ${small.adminToken}` },
          body: "{}",
        })
      ).json<{ id: string }>();
      await sendRequest(`${small.url}/v1/deploys`, {
        method: "POST",
        headers: { authorization: `Bearer ${small.adminToken}` },
        body: JSON.stringify({ id: "q", code: await fixtureCode("access"), owner: dev.id }),
      });
      const token = (
        await sendRequest(`${small.url}/v1/deploys/q/sessions`, {
          method: "POST",
          headers: { authorization: `Bearer ${small.adminToken}` },
          body: '{"email":"q@example.com"}',
        })
      ).json<{ token: string }>().token;
      const put = () =>
        sendRequest(`${small.deploymentUrl("q")}/storage`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
          body: Buffer.alloc(15_000, 2),
        });
      const results = await Promise.all(Array.from({ length: 12 }, put));
      const stored = results.filter((r) => r.status === 201);
      expect(stored).toHaveLength(6);
      for (const r of results.filter((r) => r.status !== 201))
        expect(code(r)).toEqual([413, "quota_exceeded"]);
      const key = stored[0]?.json<{ key: string }>().key;
      await sendRequest(`${small.deploymentUrl("q")}/storage/${key}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${token}` },
      });
      expect((await put()).status).toBe(201);
      expect(code(await put())).toEqual([413, "quota_exceeded"]);
      // Empty files count 4 KiB each: one client stored 3,000 of them in 3 s, counted as nothing.
      // 6 files of 15,000 bytes leave 10,000 bytes: two empty files fit, the third does not.
      const empty = () =>
        sendRequest(`${small.deploymentUrl("q")}/storage`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
          body: Buffer.alloc(0),
        });
      for (let i = 0; i < 2; i++) expect((await empty()).status).toBe(201);
      const full = await empty();
      expect(code(full)).toEqual([413, "quota_exceeded"]);
      expect(full.json<{ error: { message: string } }>().error.message).toContain(
        "each file counts 4096 bytes at least",
      );
    } finally {
      await small.dispose();
    }
  });
});

describe("unavailable storage and platform dev", () => {
  it("answers 503 unavailable when the blob store fails, recording nothing", async () => {
    const { rm: remove, writeFile } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const broken = await startTestHost();
    try {
      const dev = (
        await sendRequest(`${broken.url}/v1/developers`, {
          method: "POST",
          headers: { authorization: `Bearer ${broken.adminToken}` },
          body: "{}",
        })
      ).json<{ id: string }>();
      await sendRequest(`${broken.url}/v1/deploys`, {
        method: "POST",
        headers: { authorization: `Bearer ${broken.adminToken}` },
        body: JSON.stringify({ id: "b", code: await fixtureCode("access"), owner: dev.id }),
      });
      const token = (
        await sendRequest(`${broken.url}/v1/deploys/b/sessions`, {
          method: "POST",
          headers: { authorization: `Bearer ${broken.adminToken}` },
          body: '{"email":"b@example.com"}',
        })
      ).json<{ token: string }>().token;
      await remove(join(broken.dir, "blobs", ".tmp"), { recursive: true, force: true });
      await writeFile(join(broken.dir, "blobs", ".tmp"), "not a folder");
      const response = await sendRequest(`${broken.deploymentUrl("b")}/storage`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "text/plain" },
        body: "x",
      });
      expect(code(response)).toEqual([503, "unavailable"]);
      expect(response.json<{ error: { message: string } }>().error.message).toBe(
        "Storage is temporarily unavailable; retry later.",
      );
      const listing = await sendRequest(`${broken.deploymentUrl("b")}/__platform/storage`, {
        headers: { authorization: `Bearer ${broken.adminToken}` },
      });
      expect(listing.json<{ totals: { count: number } }>().totals.count).toBe(0);
    } finally {
      await broken.dispose();
    }
  });

  it("never takes an empty token for the operator's, on a host run without one (found by review)", async () => {
    // Before: `Bearer \u00a0` trimmed to "" and matched an empty operator token: every file listed.
    const bare = await startTestHost({ adminToken: "" });
    try {
      await bare.deployments.deploy("b", { code: await fixtureCode("access") });
      const inspect = (authorization: string) =>
        sendRequest(`${bare.deploymentUrl("b")}/__platform/storage`, { headers: { authorization } });
      expect(code(await inspect("Bearer \u00a0"))).toEqual([403, "forbidden"]);
      expect(code(await inspect("Bearer x"))).toEqual([403, "forbidden"]);
      expect(code(await inspect("Bearer"))).toEqual([401, "unauthorized"]);
    } finally {
      await bare.dispose();
    }
  });

  it("lets the local guest upload in platform dev, in memory", async () => {
    const dev = await startTestHost({ devDeployment: "dev" });
    try {
      await dev.deployments.deploy("dev", { code: await fixtureCode("access") });
      const guest = (
        await sendRequest(`${dev.deploymentUrl("dev")}/__platform/auth/guest`, {
          method: "POST",
          body: '{"name":"cli"}',
        })
      ).json<{ token: string }>();
      const uploaded = await sendRequest(`${dev.deploymentUrl("dev")}/storage`, {
        method: "POST",
        headers: { authorization: `Bearer ${guest.token}`, "content-type": "text/plain" },
        body: "dev file",
      });
      expect(uploaded.status).toBe(201);
      const { key } = uploaded.json<{ key: string }>();
      const read = await sendRequest(`${dev.deploymentUrl("dev")}/storage/${key}`, {
        headers: { authorization: `Bearer ${guest.token}` },
      });
      expect(read.text()).toBe("dev file");
      expect(
        code(await sendRequest(`${dev.deploymentUrl("dev")}/storage`, { method: "POST", body: "x" })),
      ).toEqual([401, "unauthorized"]);
    } finally {
      await dev.dispose();
    }
  });
});

describe("streamed bodies", () => {
  it("stops a chunked upload just past 5 MiB with 413 too_large, and the client reads it", async () => {
    const { request } = await import("node:http");
    const { localhostLookup } = await import("../cli/http.js");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${host.deploymentUrl("open")}/storage`, {
        method: "POST",
        lookup: localhostLookup,
        headers: {
          authorization: `Bearer ${tokens.open?.account}`,
          "content-type": "application/octet-stream",
          "transfer-encoding": "chunked",
        },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      const chunk = Buffer.alloc(256 * 1024, 3);
      let sent = 0;
      const pump = () => {
        while (sent < 8 * 1024 * 1024) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once("drain", pump);
            return;
          }
        }
        req.end();
      };
      pump();
    });
    expect(status).toBe(413);
  });
});
