/**
 * Imports that attack the host rather than the target: a small archive whose JSON files inflate
 * into work for the host's main thread, one developer's concurrent uploads filling the disk, and a
 * `--replace` racing a delete of an object it keeps. Real host, real HTTP on loopback, real disk.
 */
import { readdir, readFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type HttpResponse, localhostLookup, sendRequest } from "../cli/http.js";
import { TenantDatabase } from "../host/db/index.js";
import { ObjectTransfer } from "../host/storage/index.js";
import { DeploymentTransfer } from "../host/transfer/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deferred } from "./helpers/deferred.js";
import {
  developerWithBigDeployment,
  dumpDeployment,
  exportZip,
  importZip,
  rewriteZip,
  startUnreadExport,
  unzipAll,
} from "./helpers/export-import.js";
import { fixtureCode, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

type ErrorBody = { error: { code: string; message: string } };

let host: TestHost;
let ownerToken = "";
let sessionToken = "";
let publicKey = "";
const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(3000, 7)]);
beforeAll(async () => {
  host = await startTestHost();
  const developer = (await host.admin("/v1/developers", "POST", { name: "ada" })).json<{
    token: string;
    id: string;
  }>();
  ownerToken = developer.token;
  const created = await host.admin("/v1/deploys", "POST", {
    id: "shop",
    code: await fixtureCode("transfer"),
    owner: developer.id,
  });
  expect(created.status, created.text()).toBe(201);
  const owner = (await host.call("shop", "mutation", "addOwner", { name: "Ada", account: "acct:ada" })).json<{
    value: string;
  }>().value;
  expect((await host.call("shop", "mutation", "seed", { owner, from: 0, count: 20 })).status).toBe(200);
  sessionToken = (await host.admin("/v1/deploys/shop/sessions", "POST", { email: "u@example.com" })).json<{
    token: string;
  }>().token;
  const uploaded = await sendRequest(`${host.deploymentUrl("shop")}/storage?public=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${sessionToken}`, "content-type": "image/png" },
    body: png,
  });
  expect(uploaded.status, uploaded.text()).toBe(201);
  publicKey = uploaded.json<{ key: string }>().key;
}, 120_000);

afterAll(async () => {
  await host?.dispose();
});

function errorOf(response: HttpResponse): ErrorBody["error"] {
  return response.json<ErrorBody>().error;
}

describe("JSON files of an import archive", () => {
  it("refuses a schema.json over its limit before parsing it, naming the file and the limit", async () => {
    const exported = (await exportZip(host, "shop")).body;
    // The attack's shape: every three bytes one more object for JSON.parse to build.
    const count = Math.ceil(LIMITS.importSchemaBytes / 3);
    const bomb = await rewriteZip(exported, (files) =>
      files.set("schema.json", Buffer.from(`[${"{},".repeat(count)}{}]`)),
    );
    const refused = await importZip(host, "bomb-target", bomb, "", ownerToken);
    expect(refused.status, refused.text()).toBe(413);
    expect(errorOf(refused).code).toBe("too_large");
    expect(errorOf(refused).message).toContain("schema.json");
    expect(errorOf(refused).message).toContain(String(LIMITS.importSchemaBytes));
    expect((await host.admin("/v1/deploys/bomb-target", "GET")).status).toBe(404);
  });

  it("refuses a schema.json within its bytes that opens too many objects, before parsing it", async () => {
    const exported = (await exportZip(host, "shop")).body;
    const count = LIMITS.importSchemaMembers + 1;
    const bomb = await rewriteZip(exported, (files) =>
      files.set("schema.json", Buffer.from(`[${"{},".repeat(count)}{}]`)),
    );
    const refused = await importZip(host, "bomb-target", bomb, "", ownerToken);
    expect(refused.status, refused.text()).toBe(400);
    expect(errorOf(refused).message).toMatch(
      new RegExp(
        `^Invalid archive: schema\\.json holds more than ${LIMITS.importSchemaMembers} objects and arrays`,
      ),
    );
  });

  it("refuses an objects.jsonl line with more shape than an object record, before parsing it", async () => {
    const exported = (await exportZip(host, "shop")).body;
    const bomb = await rewriteZip(exported, (files) =>
      files.set("objects.jsonl", Buffer.from(`{"key":[${"{},".repeat(100_000)}{}]}\n`)),
    );
    const refused = await importZip(host, "bomb-target", bomb, "", ownerToken);
    expect(refused.status, refused.text()).toBe(400);
    expect(errorOf(refused).message).toBe(
      "Invalid archive: objects.jsonl line 1 holds more objects, arrays or members than an object record.",
    );
  });

  it("refuses a table row that nests objects or arrays, before parsing it", async () => {
    const exported = (await exportZip(host, "shop")).body;
    // A row is one flat object of scalars; brackets inside its strings are its own business.
    const bomb = await rewriteZip(exported, (files) =>
      files.set("tables/owners.jsonl", Buffer.from(`[${"{},".repeat(100_000)}{}]\n`)),
    );
    const refused = await importZip(host, "bomb-target", bomb, "", ownerToken);
    expect(refused.status, refused.text()).toBe(400);
    expect(errorOf(refused).message).toBe(
      "Invalid archive: tables/owners.jsonl line 1 is not a row object (it nests objects or arrays).",
    );
    expect((await host.admin("/v1/deploys/bomb-target", "GET")).status).toBe(404);
  });

  it("refuses a table row with more members than its table has fields, before parsing it", async () => {
    const exported = (await exportZip(host, "shop")).body;
    // One flat row of 300,000 members (a line of 2 million took the main thread 7.4 s to parse).
    const members = Array.from({ length: 300_000 }, (_, i) => `"f${i}":0`).join(",");
    const bomb = await rewriteZip(exported, (files) =>
      files.set("tables/owners.jsonl", Buffer.from(`{"id":"x","createdAt":1,${members}}\n`)),
    );
    const parse = vi.spyOn(JSON, "parse");
    try {
      const refused = await importZip(host, "bomb-target", bomb, "", ownerToken);
      expect(refused.status, refused.text()).toBe(400);
      expect(errorOf(refused).message).toBe(
        "Invalid archive: tables/owners.jsonl line 1 has more fields than table owners (2 and id, createdAt).",
      );
      expect(
        parse.mock.calls.some(([text]) => typeof text === "string" && text.includes('"f299999":0')),
      ).toBe(false);
    } finally {
      parse.mockRestore();
    }
    expect((await host.admin("/v1/deploys/bomb-target", "GET")).status).toBe(404);
  });

  it("refuses a createdAt or clock far in the future, which would stop the deployment's clock", async () => {
    const exported = (await exportZip(host, "shop")).body;
    // Past about 2^42 ms the clock's steps of 1/1024 ms no longer add up: every later insert
    // would share one createdAt. Exports never hold one later than their host's clock.
    const future = await rewriteZip(exported, (files) => {
      const [first, ...rest] = (files.get("tables/owners.jsonl") as Buffer).toString().split("\n");
      const row = JSON.parse(first as string) as { createdAt: number };
      row.createdAt = 1e300;
      files.set("tables/owners.jsonl", Buffer.from([JSON.stringify(row), ...rest].join("\n")));
    });
    const refused = await importZip(host, "future-target", future, "", ownerToken);
    expect(refused.status, refused.text()).toBe(400);
    expect(errorOf(refused).message).toMatch(
      /^Invalid archive: tables\/owners\.jsonl line 1 \(row [\w-]+\) was created at 1e\+300, outside 0 to \d{4}-/,
    );
    const farClock = await rewriteZip(exported, (files) => {
      const manifest = JSON.parse((files.get("platform-export.json") as Buffer).toString()) as {
        clock: number;
      };
      manifest.clock = Date.now() + 10 * 365 * 24 * 3600 * 1000;
      files.set("platform-export.json", Buffer.from(JSON.stringify(manifest)));
    });
    const refusedClock = await importZip(host, "future-target", farClock, "", ownerToken);
    expect(refusedClock.status, refusedClock.text()).toBe(400);
    expect(errorOf(refusedClock).message).toMatch(/platform-export\.json has a clock outside 0 to/);
    expect((await host.admin("/v1/deploys/future-target", "GET")).status).toBe(404);
  });

  it("refuses a deployment.json over its limit, naming the file and the limit", async () => {
    const exported = (await exportZip(host, "shop")).body;
    const bomb = await rewriteZip(exported, (files) =>
      files.set("deployment.json", Buffer.alloc(LIMITS.importDeploymentBytes + 1, " ")),
    );
    const refused = await importZip(host, "bomb-target", bomb, "", ownerToken);
    expect(refused.status, refused.text()).toBe(413);
    expect(errorOf(refused).message).toContain("deployment.json");
    expect(errorOf(refused).message).toContain(String(LIMITS.importDeploymentBytes));
  });

  it("refuses an early-entries.json larger than the rows it may name could need", async () => {
    const exported = (await exportZip(host, "shop")).body;
    // No index of the fixture keeps early entries: `{}` is all an export writes.
    const padded = await rewriteZip(exported, (files) =>
      files.set("early-entries.json", Buffer.from(`{}${" ".repeat(100_000)}`)),
    );
    const refused = await importZip(host, "bomb-target", padded, "", ownerToken);
    expect(refused.status, refused.text()).toBe(413);
    expect(errorOf(refused).message).toContain("early-entries.json");
    expect((await host.admin("/v1/deploys/bomb-target", "GET")).status).toBe(404);
  });
});

/** A capsule whose `notes.owner` is a `kind` field; `touch` writes every row again. */
function notesCapsule(kind: "string" | "userId"): Promise<string> {
  return sourceCode(`import { capsule, number, table, ${kind} } from "platform/server";
export default capsule({
  schema: { notes: table({ owner: ${kind}(), n: number() }) },
  queries: {},
  mutations: {
    add: async (ctx, args) => {
      for (let i = 0; i < args.count; i++) await ctx.db.notes.insert({ owner: "acct:" + i, n: i });
      return args.count;
    },
    touch: async (ctx) => {
      for (const row of await ctx.db.notes.collect()) await ctx.db.notes.update(row.id, { n: row.n + 1 });
    },
  },
});
`);
}

describe("early-entries.json within what its rows allow", () => {
  it("imports the early entries of every row, exactly", async () => {
    expect((await host.deployCode("early", await notesCapsule("string"))).status).toBe(201);
    expect((await host.call("early", "mutation", "add", { count: 30 })).status).toBe(200);
    // The field becomes userId() with rows in the table: rows written again since are the early
    // entries of its hidden index, every row once.
    expect((await host.deployCode("early", await notesCapsule("userId"))).status).toBe(200);
    expect((await host.call("early", "mutation", "touch", {})).status).toBe(200);
    const exported = (await exportZip(host, "early")).body;
    const files = await unzipAll(exported);
    const entries = JSON.parse(files.get("early-entries.json")!.toString()) as Record<
      string,
      Record<string, string[]>
    >;
    expect(Object.values(entries.notes ?? {}).map((ids) => ids.length)).toEqual([30]);
    const imported = await importZip(host, "early-copy", exported);
    expect(imported.status, imported.text()).toBe(200);
    // Compared as values: the imported schema record lists an index's `notBefore` and `counted`
    // in another order than a migration writes them (host/db/imported-data.ts).
    const parsed = async (id: string) =>
      Object.fromEntries(
        Object.entries(await dumpDeployment(host.database, id)).map(([key, value]) => {
          try {
            return [key, JSON.parse(value) as unknown];
          } catch {
            return [key, value];
          }
        }),
      );
    expect(await parsed("early-copy")).toEqual(await parsed("early"));
  });
});

/** An import whose body is sent piece by piece; the answer once the host gives one. */
function openImport(id: string, token: string) {
  const req = request(`${host.url}/v1/deploys/${id}/import?replace=1`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/zip" },
    lookup: localhostLookup,
  });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
  return { req, answer };
}

/** Upload folders of imports in the host's data folder now. */
async function uploadFolders(): Promise<string[]> {
  return readdir(join(host.dir, "import-uploads")).catch(() => []);
}

describe("concurrent imports of one developer", () => {
  it("refuses a second import while the first is received, before reading its body", async () => {
    const exported = (await exportZip(host, "shop")).body;
    const first = openImport("shop", ownerToken);
    first.req.write(exported.subarray(0, 1000));
    while ((await uploadFolders()).length === 0) await sleep(10);

    // A whole (small) body: refused as busy, not read as an archive.
    const second = await importZip(host, "shop", Buffer.from("not a zip"), "?replace=1", ownerToken);
    expect(second.status, second.text()).toBe(409);
    expect(errorOf(second).message).toMatch(/already importing/);
    // A body that never ends: answered all the same, so nothing of it was waited for.
    const third = openImport("shop", ownerToken);
    third.req.write(Buffer.alloc(64 * 1024, 1));
    const thirdAnswer = await third.answer;
    expect(thirdAnswer.status, thirdAnswer.text).toBe(409);
    third.req.destroy();
    expect(await uploadFolders()).toHaveLength(1);

    first.req.end(exported.subarray(1000));
    const firstAnswer = await first.answer;
    expect(firstAnswer.status, firstAnswer.text).toBe(200);
    // The turn is given back, after a success and after a failure.
    const broken = await importZip(host, "shop", Buffer.from("not a zip"), "?replace=1", ownerToken);
    expect(errorOf(broken).message).toMatch(/not a zip file/);
    expect((await importZip(host, "shop", exported, "?replace=1", ownerToken)).status).toBe(200);
    expect(await uploadFolders()).toEqual([]);
  });
});

describe("concurrent imports of several developers", () => {
  it("holds one import's rows in memory at a time on the host: the next waits, told so", async () => {
    // Each import holds its rows and then its whole batch in memory (about 1.2 GiB at the
    // limits): a few developers importing at once would end the host for every tenant.
    const exported = (await exportZip(host, "shop")).body;
    const other = (await host.admin("/v1/developers", "POST", { name: "cy" })).json<{ token: string }>();
    const inCommit = deferred();
    const release = deferred();
    const replaceData = TenantDatabase.prototype.replaceData;
    const spy = vi.spyOn(TenantDatabase.prototype, "replaceData").mockImplementationOnce(async function (
      this: TenantDatabase,
      ...args
    ) {
      inCommit.resolve();
      await release.promise;
      return replaceData.apply(this, args);
    });
    try {
      const first = importZip(host, "first-copy", exported, "", ownerToken);
      await inCommit.promise;
      const { lines, status: second } = importWithProgress("second-copy", "", other.token, exported);
      await vi.waitFor(() => expect(lines.join("\n")).toContain('"waiting"'), { timeout: 10_000 });
      // Its rows are not read while the first import holds its own.
      expect(lines.some((line) => line.includes('"checking"'))).toBe(false);
      release.resolve();
      expect((await first).status).toBe(200);
      expect(await second).toBe(200);
      expect(lines.at(-1)).toContain('"import"');
    } finally {
      release.resolve();
      spy.mockRestore();
    }
  });

  it("lets other developers' imports go on while one waits for its deployment's lock (a deploy migrating it)", async () => {
    // The import holding the host's one import turn waited there for its deployment's lock, so
    // one developer's long migration (51 s in a review's probe) held up every other import.
    const exported = (await exportZip(host, "shop")).body;
    const other = (await host.admin("/v1/developers", "POST", { name: "di" })).json<{ token: string }>();
    const locked = deferred();
    const release = deferred();
    const deploying = host.deployments.whileLocked("shop", async () => {
      locked.resolve();
      await release.promise;
    });
    try {
      await locked.promise;
      const waiting = importWithProgress("shop", "?replace=1", ownerToken, exported);
      let waitingEnded = false;
      void waiting.status.finally(() => {
        waitingEnded = true;
      });
      await vi.waitFor(() => expect(waiting.lines.join("\n")).toContain('"waiting"'), { timeout: 10_000 });

      const meanwhile = await importZip(host, "third-copy", exported, "", other.token);
      expect(meanwhile.status, meanwhile.text()).toBe(200);
      // Nor does another developer's import into it, or claim of it, wait for its lock: refused
      // at once, they never queue there in front of its developer's own deploys and imports.
      expect((await importZip(host, "shop", exported, "?replace=1", other.token)).status).toBe(403);
      const claim = await host.admin(
        "/v1/deploys/shop/claim",
        "POST",
        { claimToken: "pct_wrong" },
        other.token,
      );
      expect(claim.status, claim.text()).toBe(409);
      expect(waitingEnded).toBe(false);
      expect(waiting.lines.some((line) => line.includes('"checking"'))).toBe(false);

      release.resolve();
      await deploying;
      expect(await waiting.status).toBe(200);
      expect(waiting.lines.at(-1)).toContain('"import"');
    } finally {
      release.resolve();
      await deploying;
    }
  });
});

/** An import of `body` into `id` whose progress lines arrive in `lines` as they come. */
function importWithProgress(id: string, query: string, token: string, body: Buffer) {
  const lines: string[] = [];
  const status = new Promise<number>((resolve, reject) => {
    const req = request(`${host.url}/v1/deploys/${id}/import${query}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/zip",
        accept: "application/x-ndjson",
      },
      lookup: localhostLookup,
    });
    req.on("response", (res) => {
      res.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
  return { lines, status };
}

describe("a --replace racing a delete of an object it keeps", () => {
  it("refuses the import and changes nothing when the object is deleted before the commit", async () => {
    const exported = (await exportZip(host, "shop")).body;
    const download = () => sendRequest(`${host.deploymentUrl("shop")}/storage/${publicKey}`);
    expect((await download()).status).toBe(200);
    let before: Record<string, string> = {};
    // The window: the archive's bytes are staged (the kept object's skipped, being identical),
    // the quota locks not yet taken; the object's uploader deletes it now.
    const underQuotaLocks = ObjectTransfer.prototype.underQuotaLocks;
    const spy = vi.spyOn(ObjectTransfer.prototype, "underQuotaLocks").mockImplementationOnce(async function (
      this: ObjectTransfer,
      ...args
    ) {
      const deleted = await sendRequest(`${host.deploymentUrl("shop")}/storage/${publicKey}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${sessionToken}` },
      });
      expect(deleted.status, deleted.text()).toBe(204);
      before = await dumpDeployment(host.database, "shop");
      return underQuotaLocks.apply(this, args) as never;
    });
    try {
      const refused = await importZip(host, "shop", exported, "?replace=1", ownerToken);
      expect(refused.status, refused.text()).toBe(409);
      expect(errorOf(refused).message).toMatch(
        /was deleted from shop while the import ran; nothing was imported\. Retry/,
      );
    } finally {
      spy.mockRestore();
    }
    expect(await dumpDeployment(host.database, "shop")).toEqual(before);
    expect((await download()).status).toBe(404);

    // Retried, the import brings the object back with its bytes.
    const retried = await importZip(host, "shop", exported, "?replace=1", ownerToken);
    expect(retried.status, retried.text()).toBe(200);
    const restored = await download();
    expect(restored.status).toBe(200);
    expect(restored.body.equals(png)).toBe(true);
  });
});

describe("an archive whose objects cannot fit the owner's storage", () => {
  it("is refused before a single object is read or staged, and nothing is left", async () => {
    // Small objects, each counted as a whole file's minimum: 40 of them are past the quota of a
    // host whose developers may store 100,000 bytes. Staging all of them only to refuse the
    // import at the end would cost the host every write and then every delete.
    const small = await startTestHost({ storageLimits: { perDeveloper: 100_000 } });
    try {
      const developer = (await small.admin("/v1/developers", "POST", { name: "bo" })).json<{
        token: string;
      }>();
      const exported = (await exportZip(host, "shop")).body;
      const count = 40;
      const archive = await rewriteZip(exported, (files) => {
        const record = JSON.parse((files.get("objects.jsonl") as Buffer).toString().trim()) as {
          key: string;
        };
        files.delete(`objects/${record.key}`);
        const lines: string[] = [];
        for (let i = 0; i < count; i++) {
          const key = `private/${String(i).padStart(22, "x")}`;
          lines.push(JSON.stringify({ ...record, key, size: 1, contentType: "application/octet-stream" }));
          files.set(`objects/${key}`, Buffer.alloc(1));
        }
        files.set("objects.jsonl", Buffer.from(`${lines.join("\n")}\n`));
        const manifest = JSON.parse((files.get("platform-export.json") as Buffer).toString()) as {
          objects: { count: number; bytes: number };
        };
        manifest.objects = { ...manifest.objects, count, bytes: count };
        files.set("platform-export.json", Buffer.from(JSON.stringify(manifest)));
      });
      const stage = vi.spyOn(ObjectTransfer.prototype, "stage");
      // Nor is any object's bytes unzipped and checked: 10 KB files that unzip to 5 MiB of SVG each
      // held the markup check, and every other import, for hours before the quota refused them
      // (found by review).
      const checked = vi.spyOn(ObjectTransfer.prototype, "checkBytes");
      try {
        const refused = await importZip(small, "crowded", archive, "", developer.token);
        expect(refused.status, refused.text()).toBe(413);
        expect(errorOf(refused).code).toBe("quota_exceeded");
        expect(errorOf(refused).message).toMatch(/do not fit the owner's storage \(100000 bytes/);
        expect(stage).not.toHaveBeenCalled();
        expect(checked).not.toHaveBeenCalled();
      } finally {
        stage.mockRestore();
        checked.mockRestore();
      }
      // Nothing of it stays: no deployment, no bytes.
      expect((await small.admin("/v1/deploys/crowded", "GET")).status).toBe(404);
      expect(await readdir(join(small.dir, "blobs"))).not.toContain("crowded");
    } finally {
      await small.dispose();
    }
  });
});

/**
 * How many 5 MB files a deployment needs for its export to be more than the loopback's socket
 * buffers take in while the client reads nothing: the kernel's largest receive and send buffers
 * (here 32 and 4 MiB), and 8 MB for the processes' own. Smaller, the whole archive could be on its
 * way before the host stopped it, and the client received all of it (it did, under load).
 */
async function filesPastSocketBuffers(): Promise<number> {
  const largest = async (name: string) => {
    const sizes = await readFile(`/proc/sys/net/ipv4/${name}`, "utf8").catch(() => "");
    return Number(sizes.trim().split(/\s+/)[2] ?? 0) || 0;
  };
  const buffered = (await largest("tcp_rmem")) + (await largest("tcp_wmem")) + 8_000_000;
  return Math.max(6, Math.ceil(buffered / 5_000_000) + 1);
}

describe("exports a developer leaves unread", () => {
  const bigExport = (name: string, id: string, files?: number) =>
    developerWithBigDeployment(host, name, id, files);
  const unreadExport = (id: string, token: string) => startUnreadExport(host, id, token);

  /** Reads the rest of a stopped export: it ends short of the whole archive. */
  async function expectCutShort(unread: import("node:http").IncomingMessage): Promise<void> {
    const length = Number(unread.headers["content-length"]);
    let received = 0;
    unread.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    await new Promise((resolve) => unread.once("close", resolve).once("error", resolve).resume());
    expect(received).toBeLessThan(length);
    expect(unread.complete).toBe(false);
  }

  /** The archives the host holds on its disk (written exports, received imports). */
  async function archivesOnDisk(): Promise<string[]> {
    const folder = join(host.dir, "import-uploads");
    const subfolders = await readdir(folder).catch(() => []);
    const files = await Promise.all(subfolders.map((name) => readdir(join(folder, name)).catch(() => [])));
    return files.flat();
  }

  it("writes the whole archive before answering: an unread export holds its file, not a snapshot", async () => {
    // A client reading 64 KiB every two minutes kept the export's snapshot for half an hour, and
    // on PostgreSQL that keeps every tenant's dead rows (export-import-postgres.test.ts).
    const hal = await bigExport("hal", "writtenexport");
    const unread = await unreadExport("writtenexport", hal.token);
    expect(unread.statusCode).toBe(200);
    const length = Number(unread.headers["content-length"]);
    expect(length).toBeGreaterThan(30_000_000);
    expect(await archivesOnDisk()).toEqual(["export.zip"]);
    // Read at last, it is the whole archive, and its file is removed.
    const chunks: Buffer[] = [];
    unread.on("data", (chunk: Buffer) => chunks.push(chunk));
    await new Promise((resolve, reject) => unread.once("end", resolve).once("error", reject).resume());
    const archive = Buffer.concat(chunks);
    expect(archive.length).toBe(length);
    expect([...(await unzipAll(archive)).keys()].filter((name) => name.startsWith("objects/"))).toHaveLength(
      6,
    );
    await vi.waitFor(async () => expect(await archivesOnDisk()).toEqual([]), { timeout: 10_000 });
  }, 120_000);

  it("refuses a HEAD of an export, which would have the host write the whole archive for its headers", async () => {
    const head = await sendRequest(`${host.url}/v1/deploys/shop/export`, {
      method: "HEAD",
      headers: { authorization: `Bearer ${ownerToken}` },
    });
    expect([head.status, head.headers.allow]).toEqual([405, "GET"]);
    expect(await archivesOnDisk()).toEqual([]);
  });

  it("refuses an export the host cannot write in its time, removing what it wrote", async () => {
    const ida = await bigExport("ida", "slowexport");
    const limits = LIMITS as { exportWriteMs: number };
    const saved = limits.exportWriteMs;
    limits.exportWriteMs = 1;
    try {
      const refused = await exportZip(host, "slowexport", "", ida.token);
      expect(refused.status, refused.body.toString()).toBe(503);
      expect(JSON.parse(refused.body.toString()).error).toMatchObject({
        code: "unavailable",
        message: expect.stringMatching(/could not write this export/),
      });
      expect(refused.headers["retry-after"]).toBe("60");
      expect(await archivesOnDisk()).toEqual([]);
    } finally {
      limits.exportWriteMs = saved;
    }
    // The developer's turn is given back.
    expect((await exportZip(host, "slowexport", "", ida.token)).status).toBe(200);
  }, 120_000);

  it("stops writing an export whose client left, and removes what it wrote", async () => {
    const jo = await bigExport("jo", "leftwriting");
    // The first stored file is read only once the client has gone.
    const gate = deferred();
    const reading = deferred();
    const bytesOf = ObjectTransfer.prototype.bytesOf;
    const read = vi.spyOn(ObjectTransfer.prototype, "bytesOf").mockImplementation(async function (
      this: ObjectTransfer,
      ...args
    ) {
      reading.resolve();
      await gate.promise;
      return bytesOf.apply(this, args);
    });
    // The signal by which the host learns that the client left.
    const exportOf = DeploymentTransfer.prototype.export;
    let clientLeft: AbortSignal | undefined;
    const exporting = vi.spyOn(DeploymentTransfer.prototype, "export").mockImplementation(function (
      this: DeploymentTransfer,
      ...args
    ) {
      clientLeft = args[3];
      return exportOf.apply(this, args);
    });
    try {
      const left = request(`${host.url}/v1/deploys/leftwriting/export`, {
        headers: { authorization: `Bearer ${jo.token}` },
        lookup: localhostLookup,
      });
      left.on("error", () => {});
      left.end();
      await reading.promise;
      left.destroy();
      await vi.waitFor(() => expect(clientLeft?.aborted).toBe(true), { timeout: 20_000 });
      gate.resolve();
      // The developer's turn is given back, nothing is left on disk, and no other file was read.
      await vi.waitFor(async () => expect(await archivesOnDisk()).toEqual([]), { timeout: 20_000 });
      expect(read).toHaveBeenCalledTimes(1);
    } finally {
      read.mockRestore();
      exporting.mockRestore();
    }
    expect((await exportZip(host, "leftwriting", "", jo.token)).status).toBe(200);
  }, 120_000);

  it("refuses an export that would fill the host's disk, stopping its writer and removing what it wrote", async () => {
    // A failure of the file (ENOSPC) left the archive's writer waiting forever, holding its
    // snapshot, the developer's turn and the partial file.
    const kit = await bigExport("kit", "fullexport");
    const limits = LIMITS as { exportDiskReserveBytes: number };
    const saved = limits.exportDiskReserveBytes;
    limits.exportDiskReserveBytes = Number.MAX_SAFE_INTEGER;
    try {
      const refused = await exportZip(host, "fullexport", "", kit.token);
      expect(refused.status, refused.body.toString()).toBe(503);
      expect(JSON.parse(refused.body.toString()).error.message).toMatch(/too little free space/);
      expect(await archivesOnDisk()).toEqual([]);
    } finally {
      limits.exportDiskReserveBytes = saved;
    }
    expect((await exportZip(host, "fullexport", "", kit.token)).status).toBe(200);
  }, 120_000);

  it("stops an export that has taken its longest time, however steadily it is read", async () => {
    // Its snapshot keeps PostgreSQL from cleaning up every tenant's dead rows: read a little
    // every two minutes, an export stayed open for hours.
    const gus = await bigExport("gus", "longexport", await filesPastSocketBuffers());
    const limits = LIMITS as { exportStalledMs: number; exportMaxMs: number };
    const saved = { stalled: limits.exportStalledMs, max: limits.exportMaxMs };
    // The stall rule alone would keep it for ten minutes; the longest time ends it first.
    limits.exportStalledMs = 600_000;
    limits.exportMaxMs = 2000;
    try {
      const unread = await unreadExport("longexport", gus.token);
      expect(unread.statusCode).toBe(200);
      // Stopped: the developer's turn is given back, and the export ends short of its archive.
      await vi.waitFor(
        async () => expect((await exportZip(host, "longexport", "", gus.token)).status).toBe(200),
        { timeout: 30_000, interval: 250 },
      );
      await expectCutShort(unread);
    } finally {
      limits.exportStalledMs = saved.stalled;
      limits.exportMaxMs = saved.max;
    }
  }, 120_000);

  it("refuses a developer's second export while one is unread, and stops one its client stopped reading", async () => {
    // Each export holds a read snapshot (on PostgreSQL a connection in an open transaction) until
    // it is read: 21 unread exports took every snapshot connection of the host's own share.
    const eve = await bigExport("eve", "bigexport", await filesPastSocketBuffers());
    const limits = LIMITS as { exportStalledMs: number };
    const stalledMs = limits.exportStalledMs;
    // The stall check's period comes from the limit when an export begins (a quarter of it); each
    // check reads the limit as it is then.
    limits.exportStalledMs = 3000;
    try {
      const unread = await unreadExport("bigexport", eve.token);
      expect(unread.statusCode).toBe(200);
      // Held however long the checks below take on a busy machine, then stopped at the next check.
      limits.exportStalledMs = 3_600_000;
      const second = await exportZip(host, "bigexport", "", eve.token);
      expect(second.status, second.body.toString()).toBe(409);
      expect(JSON.parse(second.body.toString()).error.message).toMatch(/already exporting/);
      // The operator's exports are not limited.
      expect((await exportZip(host, "bigexport")).status).toBe(200);
      // Unread for the stall time: stopped, and the developer's turn given back. The limit is
      // stalled past for one check's period (750 ms) at a time, and held again for the export
      // that then takes the turn; on a busy machine the check may come later: tried again.
      await vi.waitFor(
        async () => {
          limits.exportStalledMs = 1;
          await new Promise((resolve) => setTimeout(resolve, 800));
          limits.exportStalledMs = 3_600_000;
          expect((await exportZip(host, "bigexport", "", eve.token)).status).toBe(200);
        },
        { timeout: 60_000, interval: 100 },
      );
      // Read now, the stopped export ends short of the whole archive.
      await expectCutShort(unread);
    } finally {
      limits.exportStalledMs = stalledMs;
    }
  }, 120_000);
  it("stops an export whose client left while it waited to begin, and gives the developer's turn back", async () => {
    const fay = (await host.admin("/v1/developers", "POST", { name: "fay" })).json<{
      token: string;
      id: string;
    }>();
    const created = await host.admin("/v1/deploys", "POST", {
      id: "leftexport",
      code: await fixtureCode("transfer"),
      owner: fay.id,
    });
    expect(created.status, created.text()).toBe(201);
    // The export has begun (its snapshot open, the turn taken) but the route has not answered yet.
    const transfer = DeploymentTransfer.prototype;
    const begin = transfer.export;
    const begun = deferred();
    const gate = deferred();
    transfer.export = async function (this: DeploymentTransfer, ...args) {
      const running = await begin.apply(this, args);
      begun.resolve();
      await gate.promise;
      return running;
    };
    try {
      const left = request(`${host.url}/v1/deploys/leftexport/export`, {
        headers: { authorization: `Bearer ${fay.token}` },
        lookup: localhostLookup,
      });
      left.on("error", () => {});
      left.end();
      await begun.promise;
      left.destroy();
      await new Promise((resolve) => left.once("close", resolve));
      // The host sees the connection close before the route goes on (the same event loop: a turn
      // that polls the socket comes first; later is fine too, the test then passes either way).
      await sleep(100);
      gate.resolve();
    } finally {
      transfer.export = begin;
    }
    // Nothing will read it: stopped at once, not after the stall time (two minutes), so the
    // developer's next export is let through.
    await vi.waitFor(
      async () => expect((await exportZip(host, "leftexport", "", fay.token)).status).toBe(200),
      { timeout: 20_000, interval: 100 },
    );
  }, 60_000);
});
