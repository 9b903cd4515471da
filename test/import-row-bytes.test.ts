/**
 * An import's rows are no larger than a mutation could store: a 108 KB archive carrying one
 * 100 MiB row was imported, and each later read of that row (an anonymous `get`, an export, a
 * backup) held the host's main thread 0.1 to 0.6 s (an attack review). Real host, real HTTP.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { LIMITS } from "../sdk/protocol/index.js";
import { answer, dumpDeployment, exportZip, importZip, rewriteZip } from "./helpers/export-import.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

type ErrorBody = { error: { code: string; message: string } };

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("todo", "todo")).status).toBe(201);
  for (const text of ["one", "two", "three"])
    expect((await host.call("todo", "mutation", "add", { text })).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await host?.dispose();
});

it("refuses a row line longer than the largest row a mutation stores, naming the file and line, and stores nothing", async () => {
  const exported = await exportZip(host, "todo");
  expect(exported.status).toBe(200);
  const bomb = await rewriteZip(exported.body, (files) => {
    const [first, ...rest] = (files.get("tables/todos.jsonl") as Buffer).toString().split("\n");
    const row = { ...JSON.parse(first as string), text: "a".repeat(100 * 1024 * 1024) };
    files.set("tables/todos.jsonl", Buffer.from([JSON.stringify(row), ...rest].join("\n")));
  });
  expect(bomb.length).toBeLessThan(1024 * 1024);
  const before = await dumpDeployment(host.database, "todo");
  const listed = await answer(host, "todo", "list");

  for (const [id, query] of [
    ["todo", "?replace=1"],
    ["todo-copy", ""],
  ] as const) {
    const refused = await importZip(host, id, bomb, query);
    expect(refused.status, refused.text()).toBe(413);
    const { code, message } = refused.json<ErrorBody>().error;
    expect(code).toBe("too_large");
    expect(message).toContain(`tables/todos.jsonl line 1 is more than ${LIMITS.bytesWritten} bytes`);
    expect(message).toContain("LIMITS.bytesWritten");
  }
  expect(await dumpDeployment(host.database, "todo")).toEqual(before);
  expect(await answer(host, "todo", "list")).toBe(listed);
  expect((await host.admin("/v1/deploys/todo-copy", "GET")).status).toBe(404);
}, 120_000);
