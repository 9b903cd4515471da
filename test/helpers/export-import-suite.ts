import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ZipFile } from "yazl";
import { type HttpResponse, sendRequest } from "../../cli/http.js";
import { incarnationKey } from "../../host/db/incarnation.js";
import { chargedBytes } from "../../host/storage/object-keys.js";
import { deferred } from "./deferred.js";
import { answer, dumpDeployment, exportZip, importZip, rewriteZip, unzipAll } from "./export-import.js";
import { fixtureCode, type TestHost } from "./host.js";

type Json = Record<string, unknown>;

async function mutate(host: TestHost, id: string, name: string, args: unknown): Promise<unknown> {
  const response = await host.call(id, "mutation", name, args);
  expect(response.status, response.text()).toBe(200);
  return response.json<{ value: unknown }>().value;
}

/** Every query of the transfer fixture, with its answer. */
async function transferAnswers(host: TestHost, id: string, owners: string[], items: string[]) {
  const out: string[] = [
    await answer(host, id, "owners"),
    await answer(host, id, "counts"),
    await answer(host, id, "latest"),
  ];
  for (const owner of owners) out.push(await answer(host, id, "byOwner", { owner }));
  for (const item of items) out.push(await answer(host, id, "item", { id: item }));
  let cursor: string | null = null;
  for (;;) {
    const page = await sendRequest(`${host.deploymentUrl(id)}/api/query/items`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ cursor }),
    });
    const value = page.json<{ value: { page: unknown[]; isDone: boolean; continueCursor: string } }>().value;
    // Cursors are bound to their deployment: compare pages, not cursors.
    out.push(JSON.stringify(value.page));
    if (value.isDone) break;
    cursor = value.continueCursor;
  }
  return out;
}

function expectOk(response: HttpResponse): Json {
  expect(response.status, response.text()).toBe(200);
  return response.json<Json>();
}

export function exportImportSuite(label: string, start: () => Promise<TestHost>): void {
  describe(`export and import (${label})`, () => {
    let host: TestHost;
    let owners: string[] = [];
    let items: string[] = [];
    let ownerToken = "";
    const objectKeys: string[] = [];
    const files: Record<string, Buffer> = {};

    beforeAll(async () => {
      host = await start();
      const developer = (await host.admin("/v1/developers", "POST", { name: "ada" })).json<{
        token: string;
        id: string;
      }>();
      ownerToken = developer.token;
      const created = await host.admin("/v1/deploys", "POST", {
        id: "shop",
        code: await fixtureCode("transfer"),
        owner: developer.id,
        env: { SECRET: "hunter2" },
      });
      expect(created.status, created.text()).toBe(201);
      owners = [
        (await mutate(host, "shop", "addOwner", { name: "Ada", account: "acct:ada" })) as string,
        (await mutate(host, "shop", "addOwner", { name: "Bob", account: "guest:bob" })) as string,
      ];
      await mutate(host, "shop", "seed", { owner: owners[0], from: 0, count: 700 });
      await mutate(host, "shop", "seed", { owner: owners[1], from: 700, count: 150 });
      items = [
        (await mutate(host, "shop", "addItem", {
          title: 'edge \u{10FFFF} "quoted" \\ slash',
          score: -0,
          owner: owners[1],
          by: "acct:ada",
          note: "",
        })) as string,
        (await mutate(host, "shop", "addItem", { title: "plain", score: 1e300, owner: owners[0] })) as string,
      ];
      await mutate(host, "shop", "setNote", { id: items[1], note: "later" });
      await mutate(host, "shop", "setNote", { id: items[0], note: null });
      await mutate(host, "shop", "remove", { id: items[1] });
      // Objects: uploaded by a signed-in account of the app.
      const session = (
        await host.admin("/v1/deploys/shop/sessions", "POST", { email: "u@example.com" })
      ).json<{
        token: string;
      }>();
      files.png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(3000, 7)]);
      files.txt = Buffer.from("private notes\n");
      for (const [body, type, visibility] of [
        [files.png, "image/png", "true"],
        [files.txt, "text/plain", "false"],
      ] as const) {
        const uploaded = await sendRequest(`${host.deploymentUrl("shop")}/storage?public=${visibility}`, {
          method: "POST",
          headers: { authorization: `Bearer ${session.token}`, "content-type": type },
          body,
        });
        expect(uploaded.status, uploaded.text()).toBe(201);
        objectKeys.push(uploaded.json<{ key: string }>().key);
      }
    }, 120_000);

    afterAll(async () => {
      await host?.dispose();
    });

    it("copies a deployment exactly: rows, indexes, counts, clock, schema and objects", async () => {
      const exported = await exportZip(host, "shop", "", ownerToken);
      expect(exported.status, exported.text()).toBe(200);
      expect(exported.headers["content-type"]).toBe("application/zip");
      const archive = await unzipAll(exported.body);
      const manifest = JSON.parse(archive.get("platform-export.json")!.toString()) as Json;
      expect(manifest.tables).toEqual({ owners: 2, items: 851 });
      expect(manifest.objects).toEqual({
        count: 2,
        bytes: files.png!.length + files.txt!.length,
        deletedDuringExport: 0,
      });
      const deployment = archive.get("deployment.json")!.toString();
      expect(deployment).toContain('"envKeys":["SECRET"]');
      expect(deployment).not.toContain("hunter2");

      const imported = expectOk(await importZip(host, "shop-copy", exported.body));
      expect(imported).toMatchObject({ tables: { owners: 2, items: 851 }, objects: 2, replaced: false });
      expect(imported.claimToken).toMatch(/^pct_/);
      expect(await dumpDeployment(host.database, "shop-copy")).toEqual(
        await dumpDeployment(host.database, "shop"),
      );
      // Its data is marked as the new deployment's, not the exported one's (host/db/incarnation.ts).
      const copied = await host.deployments.get("shop-copy");
      expect(await host.database.store.get(incarnationKey("shop-copy"))).toBe(copied?.incarnation);
      expect(copied?.incarnation).not.toBe((await host.deployments.get("shop"))?.incarnation);
      expect(await transferAnswers(host, "shop-copy", owners, items)).toEqual(
        await transferAnswers(host, "shop", owners, items),
      );
      // Objects keep their keys and bytes, and count against the new deployment's quota owner.
      const copySession = (
        await host.admin("/v1/deploys/shop-copy/sessions", "POST", { email: "u@example.com" })
      ).json<{
        token: string;
      }>();
      for (const [key, bytes] of [
        [objectKeys[0], files.png],
        [objectKeys[1], files.txt],
      ] as const) {
        const download = await sendRequest(`${host.deploymentUrl("shop-copy")}/storage/${key}`, {
          headers: { authorization: `Bearer ${copySession.token}` },
        });
        expect(download.status).toBe(200);
        expect(download.body.equals(bytes!)).toBe(true);
      }
      const usage = await host.database.records<{ bytes: number }>("storage-usage").get("dev:shop-copy");
      expect(usage?.bytes).toBe(chargedBytes(files.png!.length) + chargedBytes(files.txt!.length));
      // New writes on the copy sort after every imported row.
      const added = await mutate(host, "shop-copy", "addItem", { title: "new", score: 0, owner: owners[0] });
      expect(JSON.parse((await answer(host, "shop-copy", "latest")).slice(4)).value.id).toBe(added);
    });

    it("refuses a target with data unless --replace, then replaces it exactly", async () => {
      const exported = await exportZip(host, "shop");
      const refused = await importZip(host, "shop-copy", exported.body);
      expect(refused.status).toBe(409);
      expect(refused.json<{ error: { message: string } }>().error.message).toContain("--replace");
      const replaced = expectOk(await importZip(host, "shop-copy", exported.body, "?replace=1"));
      expect(replaced.replaced).toBe(true);
      expect(await dumpDeployment(host.database, "shop-copy")).toEqual(
        await dumpDeployment(host.database, "shop"),
      );
      // Usage counts the objects once, not twice.
      const usage = await host.database.records<{ bytes: number }>("storage-usage").get("dev:shop-copy");
      expect(usage?.bytes).toBe(chargedBytes(files.png!.length) + chargedBytes(files.txt!.length));
    });

    it("leaves objects out when asked, on export or import", async () => {
      const exported = await exportZip(host, "shop", "?objects=0");
      const archive = await unzipAll(exported.body);
      expect([...archive.keys()].some((name) => name.startsWith("objects"))).toBe(false);
      expectOk(await importZip(host, "shop-rows", exported.body));
      const dump = await dumpDeployment(host.database, "shop-rows");
      expect(Object.keys(dump).some((key) => key.startsWith("object:"))).toBe(false);
      const withObjects = await exportZip(host, "shop");
      expectOk(await importZip(host, "shop-rows2", withObjects.body, "?objects=0"));
      expect(await host.database.records("objects").listPrefix("shop-rows2/")).toEqual([]);
    });

    it("exports and imports a legacy (v0) deployment", async () => {
      expect((await host.deployCode("tasks", await fixtureCode("legacy"))).status).toBe(201);
      expect((await host.call("tasks", "mutation", "seed", [0, 120])).status).toBe(200);
      expect((await host.call("tasks", "mutation", "add", ["last", "tag1", 5])).status).toBe(200);
      const exported = await exportZip(host, "tasks");
      expect(exported.status).toBe(200);
      expectOk(await importZip(host, "tasks-copy", exported.body));
      const database = await host.database.deployment("tasks-copy");
      expect(database.legacy).toBe(true);
      expect(await dumpDeployment(host.database, "tasks-copy")).toEqual(
        await dumpDeployment(host.database, "tasks"),
      );
      for (const [name, args] of [
        ["open", {}],
        ["byTag", { tag: "tag3" }],
        ["urgent", {}],
        ["latestDone", {}],
        ["doneInTag", { tag: "tag0" }],
      ] as const)
        expect(await answer(host, "tasks-copy", name, args)).toBe(await answer(host, "tasks", name, args));
    });

    it("takes one snapshot while the app keeps taking writes", async () => {
      const owner = owners[0] as string;
      const before = JSON.parse((await answer(host, "shop", "counts")).slice(4)).value.items as number;
      // The archive's first file waits until 20 writes are done: the snapshot is taken by then,
      // and no table has been read.
      const reached = deferred();
      const gate = deferred();
      const addReadStream = ZipFile.prototype.addReadStream;
      const held = vi.spyOn(ZipFile.prototype, "addReadStream").mockImplementation(function (
        this: ZipFile,
        stream,
        name,
        options,
      ) {
        if (name !== "deployment.json") return addReadStream.call(this, stream, name, options);
        reached.resolve();
        const later = new PassThrough();
        void gate.promise.then(() => stream.pipe(later));
        return addReadStream.call(this, later, name, options);
      });
      let body: Buffer;
      let writesDuring = 0;
      try {
        const exported = exportZip(host, "shop");
        await reached.promise;
        for (let i = 0; i < 20; i++) {
          await mutate(host, "shop", "addItem", { title: `during ${i}`, score: i, owner });
          writesDuring++;
        }
        gate.resolve();
        body = (await exported).body;
      } finally {
        held.mockRestore();
      }
      expect(writesDuring).toBe(20);
      const archive = await unzipAll(body);
      const manifest = JSON.parse(archive.get("platform-export.json")!.toString()) as {
        tables: { items: number };
      };
      expect(manifest.tables.items).toBe(before);
      expect(archive.get("tables/items.jsonl")!.toString()).not.toContain("during 0");
      expectOk(await importZip(host, "shop-snapshot", body));
      const counts = JSON.parse((await answer(host, "shop-snapshot", "counts")).slice(4)).value;
      expect(counts.items).toBe(before);
    });

    it("refuses a broken or tampered archive with a clear error, and writes nothing", async () => {
      const exported = (await exportZip(host, "shop")).body;
      const cases: Array<[string, Promise<Buffer> | Buffer, RegExp]> = [
        ["not a zip", Buffer.from("hello"), /Invalid archive: not a zip file/],
        [
          "a row of the wrong type",
          rewriteZip(exported, (files) => {
            const rows = files.get("tables/items.jsonl")!.toString().split("\n");
            rows[3] = rows[3]!.replace(/"score":[^,]+/, '"score":"high"');
            files.set("tables/items.jsonl", Buffer.from(rows.join("\n")));
          }),
          /tables\/items\.jsonl line 4: Existing row \S+ does not fit items\.score: expected number, got string/,
        ],
        [
          "a malformed id",
          rewriteZip(exported, (files) => {
            const rows = files.get("tables/owners.jsonl")!.toString();
            files.set("tables/owners.jsonl", Buffer.from(rows.replace(/"id":"[^"]+"/, '"id":"../../x"')));
          }),
          /tables\/owners\.jsonl line 1 has no well-formed id/,
        ],
        [
          "a duplicated row",
          rewriteZip(exported, (files) => {
            const rows = files.get("tables/owners.jsonl")!.toString().split("\n");
            const manifest = JSON.parse(files.get("platform-export.json")!.toString());
            manifest.tables.owners = 3;
            files.set("platform-export.json", Buffer.from(JSON.stringify(manifest)));
            files.set("tables/owners.jsonl", Buffer.from([rows[0], rows[0], rows[1]].join("\n")));
          }),
          /appears twice/,
        ],
        [
          "a schema that is not the code's",
          rewriteZip(exported, (files) => {
            const schema = JSON.parse(files.get("schema.json")!.toString());
            schema.tables.items.spec.fields.score.optional = true;
            files.set("schema.json", Buffer.from(JSON.stringify(schema)));
          }),
          /does not match the code's schema/,
        ],
        [
          "an extra file",
          rewriteZip(exported, (files) => files.set("extra.txt", Buffer.from("x"))),
          /Invalid archive: extra\.txt is not part of the export format/,
        ],
        [
          "object bytes that are not what the record says",
          rewriteZip(exported, (files) => files.set(`objects/${objectKeys[1]}`, Buffer.from("short"))),
          /Invalid archive: the bytes of private\/\S+ are not the 14 its record says/,
        ],
        [
          "an HTML object",
          rewriteZip(exported, (files) => {
            const html = Buffer.from("<!doctype html><script>alert(1)</script>");
            files.set(`objects/${objectKeys[1]}`, html);
            const lines = files
              .get("objects.jsonl")!
              .toString()
              .replace('"size":14', `"size":${html.length}`);
            files.set("objects.jsonl", Buffer.from(lines));
          }),
          /blocked_type|cannot be stored/,
        ],
      ];
      for (const [what, zip, message] of cases) {
        const refused = await importZip(host, "bad-target", await zip);
        expect(refused.status, what).toBeGreaterThanOrEqual(400);
        expect(refused.text(), what).toMatch(message);
      }
      expect((await host.admin("/v1/deploys/bad-target", "GET")).status).toBe(404);
      expect(await dumpDeployment(host.database, "bad-target")).toEqual({});
      expect(await host.database.records("deployment-imports").list()).toEqual([]);
    });

    it("lets only the owner or the operator export or import", async () => {
      const other = (await host.admin("/v1/developers", "POST", { name: "eve" })).json<{ token: string }>();
      const refused = await exportZip(host, "shop", "", other.token);
      expect(refused.status).toBe(403);
      const exported = (await exportZip(host, "shop", "", ownerToken)).body;
      expect((await importZip(host, "shop", exported, "?replace=1", other.token)).status).toBe(403);
      expect((await sendRequest(`${host.url}/v1/deploys/shop/export`)).status).toBe(401);
      // A developer's import into a new id creates a deployment that developer owns.
      const mine = expectOk(await importZip(host, "eve-copy", exported, "", other.token));
      expect((mine.deployment as { claimed: boolean }).claimed).toBe(true);
      expect(mine.claimToken).toBeUndefined();
    });
  });
}
