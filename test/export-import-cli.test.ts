/**
 * `platform export` and `platform import` as a developer runs them: against `platform dev` (its
 * local deployment, no token) and against a hosted deployment (`--host`, the owner's token).
 */
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { type CliProcess, runCliAsync, startDev } from "./helpers/cli.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-export-cli-"));
  env = { PLATFORM_CONFIG_DIR: dir, PLATFORM_TOKEN: "", PLATFORM_ADMIN_TOKEN: "" };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("platform export and import against platform dev", () => {
  let dev: CliProcess;
  let port: number;
  beforeAll(async () => {
    ({ dev, port } = await startDev("fixtures/todo"));
  }, 120_000);
  afterAll(() => dev?.stop());

  const call = (kind: string, name: string, args: unknown) =>
    sendRequest(`http://localhost:${port}/api/${kind}/${name}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(args),
    });

  it("exports the local deployment and imports it back over --replace", async () => {
    for (const text of ["one", "two", "three"])
      expect((await call("mutation", "add", { text })).status).toBe(200);
    const listed = (await call("query", "list", {})).text();
    const out = join(dir, "dev.zip");
    // A project may ship a link where the export once wrote its partial file: the archive was
    // written through it, over the file it named.
    const victim = join(dir, "victim");
    await writeFile(victim, "keep\n");
    await symlink(victim, `${out}.partial`);
    const exported = await runCliAsync(["export", "--out", out, "--port", String(port)], env);
    expect(exported.stderr).toBe("");
    expect(exported.status).toBe(0);
    expect(exported.stdout).toMatch(
      /^exported the dev server on port \d+: 1 table, 3 rows, 0 objects \(0 B\) to /,
    );
    expect(await readFile(victim, "utf8")).toBe("keep\n");
    // No partial file of its own is left; the planted link is untouched.
    expect((await readdir(dir)).filter((name) => name.includes(".partial"))).toEqual(["dev.zip.partial"]);
    // A link at the partial file's own name goes as a link, and the export writes a new file.
    await symlink(victim, join(dir, ".dev.zip.partial"));
    const again = await runCliAsync(["export", "--out", out, "--port", String(port)], env);
    expect(again.status, again.stderr).toBe(0);
    expect(await readFile(victim, "utf8")).toBe("keep\n");
    expect((await readdir(dir)).filter((name) => name.includes(".partial"))).toEqual(["dev.zip.partial"]);
    expect((await call("mutation", "add", { text: "four" })).status).toBe(200);

    const refused = await runCliAsync(["import", out, "--port", String(port)], env);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("error: conflict: Deployment");
    expect(refused.stderr).toContain("--replace");

    const imported = await runCliAsync(["import", out, "--port", String(port), "--replace", "--json"], env);
    expect(imported.status, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ tables: { todos: 3 }, objects: 0, replaced: true });
    expect((await call("query", "list", {})).text()).toBe(listed);
  }, 120_000);

  it("refuses an import sent by a web page", async () => {
    const response = await sendRequest(`http://localhost:${port}/__platform/import`, {
      method: "POST",
      headers: { "content-type": "text/plain", origin: "http://evil.example" },
      body: "x",
    });
    expect(response.status).toBe(403);
  });
});

describe("platform export and import against a hosted deployment", () => {
  let host: TestHost;
  let token: string;
  beforeAll(async () => {
    host = await startTestHost();
    const developer = (await host.admin("/v1/developers", "POST", { name: "ada" })).json<{
      id: string;
      token: string;
    }>();
    token = developer.token;
    await host.admin("/v1/deploys", "POST", {
      id: "todo",
      code: await fixtureCode("todo"),
      owner: developer.id,
    });
    for (const text of ["a", "b"]) await host.call("todo", "mutation", "add", { text });
  }, 120_000);
  afterAll(() => host?.dispose());

  it("copies a deployment to a new id with the owner's token", async () => {
    const out = join(dir, "todo.zip");
    const exported = await runCliAsync(["export", "todo", "--host", host.url, "--out", out, "--json"], {
      ...env,
      PLATFORM_TOKEN: token,
    });
    expect(exported.status, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ deployment: "todo", tables: { todos: 2 } });
    const imported = await runCliAsync(["import", out, "todo-copy", "--host", host.url], {
      ...env,
      PLATFORM_TOKEN: token,
    });
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.stdout).toBe("imported into todo-copy: 1 table, 2 rows, 0 objects\n");
    expect((await host.call("todo-copy", "query", "list", {})).text()).toBe(
      (await host.call("todo", "query", "list", {})).text(),
    );
    const noToken = await runCliAsync(["export", "todo", "--host", host.url, "--out", out], env);
    expect(noToken.status).toBe(1);
    expect(noToken.stderr).toContain("error: unauthorized: No credentials");
    const missing = await runCliAsync(["import", join(dir, "nope.zip"), "x", "--host", host.url], {
      ...env,
      PLATFORM_TOKEN: token,
    });
    expect(missing.stderr).toContain("error: not_found: No file");
  }, 120_000);
});
