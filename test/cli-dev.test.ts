/** `platform dev`: serves a capsule, redeploys when server/ changes, keeps the data. */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { type CliProcess, runCli, startDev } from "./helpers/cli.js";

let dir: string;
let dev: CliProcess;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-dev-test-"));
  await cp("fixtures/todo", dir, { recursive: true });
  ({ dev, port } = await startDev(dir));
});
afterAll(async () => {
  await dev.stop();
  await rm(dir, { recursive: true, force: true });
});

const call = (kind: string, name: string, args: unknown = {}) =>
  sendRequest(`http://localhost:${port}/api/${kind}/${name}`, { method: "POST", body: JSON.stringify(args) });

it("redeploys on change, keeping data; a broken edit keeps the last good version serving", async () => {
  expect((await call("mutation", "add", { text: "survives" })).status).toBe(200);
  const file = join(dir, "server", "index.ts");
  const source = await readFile(file, "utf8");
  await writeFile(
    file,
    source.replace(
      "count: async (ctx) => ctx.db.todos.count(),",
      "count: async (ctx) => (await ctx.db.todos.count()) + 1000,",
    ),
  );
  await dev.waitFor(/deployed[\s\S]*deployed/);
  expect((await call("query", "count")).json()).toEqual({ value: 1001 });
  await writeFile(file, `${source}\nthis is not typescript`);
  await dev.waitFor(/error: bad_request: Build failed[\s\S]*still serving the last version that deployed/);
  expect((await call("query", "count")).json()).toEqual({ value: 1001 });
  // The same failure again (a save that changes nothing the build sees) is noted, not repeated.
  await writeFile(file, `${source}\nthis is not typescript\n`);
  await dev.waitFor(/the same error as above/);
  expect(dev.output().match(/Build failed/g)).toHaveLength(1);
  expect(((await call("query", "list")).json() as { value: Array<{ text: string }> }).value[0]?.text).toBe(
    "survives",
  );
}, 60_000);

it("keeps watching a capsule that does not deploy at start, and deploys it once a save fixes it", async () => {
  const broken = await mkdtemp(join(tmpdir(), "platform-dev-broken-"));
  await cp("fixtures/todo", broken, { recursive: true });
  const file = join(broken, "server", "index.ts");
  const source = await readFile(file, "utf8");
  await writeFile(file, `${source}\nthis is not typescript`);
  const started = await startDev(broken, ["--no-typecheck"]);
  try {
    expect(started.dev.output()).toMatch(
      /error: bad_request: Build failed[\s\S]*the capsule did not deploy; nothing is served until a save fixes it/,
    );
    const list = () =>
      sendRequest(`http://localhost:${started.port}/api/query/list`, { method: "POST", body: "{}" });
    expect((await list()).status).toBe(404);
    await writeFile(file, source);
    await started.dev.waitFor(/deployed /);
    expect((await list()).json()).toEqual({ value: [] });
  } finally {
    await started.dev.stop();
    await rm(broken, { recursive: true, force: true });
  }
}, 60_000);

it("shows where in the source a capsule threw while loading", async () => {
  const app = await mkdtemp(join(tmpdir(), "platform-dev-throws-"));
  await mkdir(join(app, "server"), { recursive: true });
  await writeFile(
    join(app, "server", "index.ts"),
    'import { capsule } from "platform/server";\nconst ready = false;\nif (!ready) throw new Error("boom at load");\nexport default capsule({ schema: {} });\n',
  );
  const started = await startDev(app, ["--no-typecheck"]);
  try {
    expect(started.dev.output()).toMatch(
      /error: bad_request: Deploy failed: The capsule threw while loading: boom at load\n\s+at server\/index\.ts:3:\d+/,
    );
  } finally {
    await started.dev.stop();
    await rm(app, { recursive: true, force: true });
  }
}, 60_000);

it("deploys again when .env.platform.server changes", async () => {
  const app = await mkdtemp(join(tmpdir(), "platform-dev-env-"));
  await cp("fixtures/logs", app, { recursive: true });
  const started = await startDev(app, ["--no-typecheck"]);
  try {
    const keys = async () =>
      (
        await sendRequest(`http://localhost:${started.port}/api/mutation/echoEnv`, {
          method: "POST",
          body: "{}",
        })
      ).json();
    expect(await keys()).toEqual({ value: [] });
    await writeFile(join(app, ".env.platform.server"), "NEWVAR=hello\n");
    await started.dev.waitFor(/deployed [\s\S]*deployed /);
    expect(await keys()).toEqual({ value: ["NEWVAR"] });
  } finally {
    await started.dev.stop();
    await rm(app, { recursive: true, force: true });
  }
}, 60_000);

it("exits 1 with a clear message when the folder has no capsule", () => {
  const result = runCli(["deploy", tmpdir(), "--host", "http://localhost:1", "--token", "x"]);
  expect(result.status).toBe(1);
  expect(result.stderr).toContain("No server/index.ts in");
});

it("builds the capsule's React client to /main.js, serves it beside client/, and rebuilds on change", async () => {
  // Inside the checkout, so the app resolves react from the repository's node_modules.
  await mkdir(".data", { recursive: true });
  const app = await mkdtemp(join(".data", "live-app-"));
  await cp("fixtures/live-app", app, { recursive: true });
  const started = await startDev(app);
  try {
    const base = `http://localhost:${started.port}`;
    const page = await sendRequest(`${base}/`);
    expect(page.text()).toContain('<script type="module" src="/main.js">');
    const script = await sendRequest(`${base}/main.js`);
    expect(script.headers["content-type"]).toContain("javascript");
    expect(script.text()).toContain("usePaginatedQuery");
    const file = join(app, "client", "main.tsx");
    await writeFile(file, (await readFile(file, "utf8")).replace("Load more", "Show more please"));
    await started.dev.waitFor(/built[\s\S]*built/);
    expect((await sendRequest(`${base}/main.js`)).text()).toContain("Show more please");
  } finally {
    await started.dev.stop();
    await rm(app, { recursive: true, force: true });
  }
}, 60_000);
