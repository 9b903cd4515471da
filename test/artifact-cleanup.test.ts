/**
 * A host keeps the bundles its deployments serve and removes the rest: each deploy stores its
 * bundle (up to 16 MB), and a developer may deploy in a loop. Real host, real HTTP, real disk.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { bundleHash } from "../host/deployments/bundle-hash.js";
import { exportZip, importZip, rewriteZip } from "./helpers/export-import.js";
import { fixtureCode, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let base = "";
beforeAll(async () => {
  host = await startTestHost();
  base = await fixtureCode("todo");
});
afterAll(() => host.dispose());

/** The todo bundle, made distinct by a trailing comment. */
const version = (n: number) => `${base}\n// version ${n}\n`;
const stored = async (code: string) => host.database.records("artifacts").has(await bundleHash(code));

it("removes a replaced or deleted deployment's bundle unless another deployment serves it", async () => {
  expect((await host.deployCode("first", version(1))).status).toBe(201);
  expect((await host.deployCode("second", version(1))).status).toBe(201);
  expect((await host.deployCode("first", version(2))).status).toBe(200);
  // "second" serves version 1 still: kept.
  expect(await stored(version(1))).toBe(true);
  expect((await host.deployCode("second", version(3))).status).toBe(200);
  expect(await stored(version(1))).toBe(false);
  // A deploy loop keeps one bundle per deployment.
  for (let n = 4; n < 8; n++) expect((await host.deployCode("first", version(n))).status).toBe(200);
  for (let n = 2; n < 7; n++) expect(await stored(version(n)), `version ${n}`).toBe(n === 3);
  expect(await stored(version(7))).toBe(true);
  // Deleted: its bundle goes with it.
  expect((await host.admin("/v1/deploys/first", "DELETE")).status).toBe(204);
  expect(await stored(version(7))).toBe(false);
  expect(await stored(version(3))).toBe(true);
  // A host started on the folder loads "second"'s bundle from the store.
  await host.close();
  host = await startTestHost({ data: host.dir });
  expect((await host.call("second", "query", "list")).status).toBe(200);
});

it("removes the bundle of a deploy that failed", async () => {
  // Loads and declares, but its schema makes a field of stored rows another type: refused.
  expect((await host.deployCode("kept", version(10))).status).toBe(201);
  expect((await host.call("kept", "mutation", "add", { text: "a row" })).status).toBe(200);
  const failing = await sourceCode(`
    import { capsule, number, table } from "platform/server";
    export default capsule({ schema: { todos: table({ text: number() }) }, queries: {} });
  `);
  const refused = await host.deployCode("kept", failing);
  expect(refused.status, refused.text()).toBeGreaterThanOrEqual(400);
  expect(await stored(failing)).toBe(false);
  expect(await stored(version(10))).toBe(true);
});

it("removes the bundle an import replaced, and the one of an import that failed", async () => {
  expect((await host.deployCode("source", version(20))).status).toBe(201);
  const exported = (await exportZip(host, "source")).body;
  const withCode = (code: string) => rewriteZip(exported, (files) => files.set("code.js", Buffer.from(code)));
  expect((await importZip(host, "copy", await withCode(version(21)))).status).toBe(200);
  expect(await stored(version(21))).toBe(true);
  const replaced = await importZip(host, "copy", await withCode(version(22)), "?replace=1");
  expect(replaced.status, replaced.text()).toBe(200);
  expect(await stored(version(21))).toBe(false);
  expect(await stored(version(22))).toBe(true);
  // Its code loads, but declares another schema than the archive's: refused after it was stored.
  const otherSchema = await sourceCode(`
    import { capsule, number, table } from "platform/server";
    export default capsule({ schema: { todos: table({ n: number() }) }, queries: {} });
  `);
  const refused = await importZip(host, "copy", await withCode(otherSchema), "?replace=1");
  expect(refused.status, refused.text()).toBe(400);
  expect(await stored(otherSchema)).toBe(false);
  expect(await stored(version(22))).toBe(true);
});
