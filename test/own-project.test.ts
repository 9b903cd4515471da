/**
 * The README's "Use it in your own project" commands, run as written: `npx ./platform init myapp`
 * (which packs this checkout with `npm pack`) in a temporary folder outside the repository, then
 * `npm install` from that tarball (the npm registry being the only network it uses, for the
 * dependencies), `npm run typecheck` and `npm run dev`, and calls to the app over HTTP and through
 * `platform/client` as the app itself imports it. Outside the repository, nothing can resolve from
 * the checkout's node_modules, so a file missing from the package, or a dependency only the
 * checkout has, fails here. The install compiles isolated-vm, hence the long timeout.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join, sep } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { freePort } from "./helpers/cli.js";

const repo = realpathSync(process.cwd());
let work: string;
let dev: ChildProcess | undefined;

/** The commands of the README's section, comments and blank lines dropped. */
function readmeCommands(): string[] {
  const readme = readFileSync(join(repo, "README.md"), "utf8");
  const section = readme.split("## Use it in your own project")[1]?.split("\n## ")[0] ?? "";
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "");
}

/** Runs one shell command in `cwd`; fails the test with its output when it fails. */
function sh(command: string, cwd: string): string {
  const started = Date.now();
  const result = spawnSync(command, { cwd, shell: true, encoding: "utf8", env: cleanEnv() });
  console.log(`${command}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  expect(result.status, `${command}\n${result.stdout}\n${result.stderr}`).toBe(0);
  return result.stdout;
}

/**
 * This process's environment as a fresh shell would have it: without what `npm test` adds
 * (`npm_*` variables, `INIT_CWD`, the checkout's node_modules/.bin on PATH), so nothing the app
 * runs can reach the checkout's packages. npm's own settings (.npmrc: cache, registry) still apply.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_|^INIT_CWD$/i.test(key)) env[key] = value;
  }
  env.PATH = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((entry) => !entry.includes(`node_modules${sep}.bin`))
    .join(delimiter);
  return env;
}

/** Starts `npm run dev` in its own process group, so that stopping it stops npm and the CLI. */
function startDev(app: string, port: number): { child: ChildProcess; output: () => string } {
  const child = spawn("npm", ["run", "dev", "--", "--port", String(port)], {
    cwd: app,
    env: cleanEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output };
}

async function waitFor(output: () => string, child: ChildProcess, pattern: RegExp, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(output())) {
    if (child.exitCode !== null) throw new Error(`npm run dev exited (${child.exitCode}):\n${output()}`);
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${pattern}:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Stops the dev server's whole process group (npm, the CLI and the CLI's re-run of itself). */
async function stopDev(): Promise<void> {
  const child = dev;
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  process.kill(-child.pid, "SIGTERM");
  const timer = setTimeout(() => process.kill(-(child.pid as number), "SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/** A typed client call the app's `npm run typecheck` checks: the capsule's types reach the client. */
const TYPED_CLIENT = `import { createClient } from "platform/client";
import type app from "../server/index";

const client = createClient<typeof app>("http://localhost:3000");
export async function addNote(text: string): Promise<string> {
  const notes = await client.query("list");
  const first: string | undefined = notes[0]?.text;
  // @ts-expect-error: the capsule has no mutation "remove"
  await client.mutation("remove", {});
  return first ?? client.mutation("add", { text });
}
`;

/** What the app runs in Node: `platform/client` resolved from its own node_modules. */
const CLIENT_SCRIPT = `import { createClient } from "platform/client";

const client = createClient(process.argv[2]);
const id = await client.mutation("add", { text: "through platform/client" });
const notes = await client.query("list");
client.close();
console.log(JSON.stringify({ id, notes }));
`;

beforeAll(async () => {
  work = await mkdtemp(join(realpathSync(tmpdir()), "platform-own-"));
});
afterAll(async () => {
  await stopDev();
  await rm(work, { recursive: true, force: true });
  const entry = npxCacheEntry(join(work, "platform"));
  if (entry) await rm(entry, { recursive: true, force: true });
});

/**
 * The folder `npx <dir>` keeps for a directory in npm's cache (named, in npm's libnpmexec, by a
 * hash of the directory's path): every run of this test uses a new temporary path, so it removes
 * its own entry rather than leave one behind per run.
 */
function npxCacheEntry(dir: string): string | undefined {
  const cache = spawnSync("npm", ["config", "get", "cache"], { encoding: "utf8" }).stdout.trim();
  if (!isAbsolute(cache)) return undefined;
  const hash = createHash("sha512").update(dir).digest("hex").slice(0, 16);
  return join(cache, "_npx", hash);
}

it("an app made with platform init outside the checkout installs from the tarball, type-checks and serves", async () => {
  expect(work.startsWith(repo + sep)).toBe(false);
  const commands = readmeCommands();
  expect(commands[0]).toMatch(/^git clone .* platform && \(cd platform && npm install\)$/);
  expect(commands.slice(1)).toEqual([
    "npx ./platform init myapp",
    "cd myapp && npm install && npm run typecheck",
    "npm run dev",
  ]);

  // The clone is this checkout (built by npm test's pretest), under the README's folder name.
  await symlink(repo, join(work, "platform"));
  const app = join(work, "myapp");
  sh("npx ./platform init myapp", work);
  const manifest = JSON.parse(readFileSync(join(app, "package.json"), "utf8"));
  expect(manifest.scripts).toEqual({
    dev: "platform dev",
    deploy: "platform deploy",
    typecheck: "tsc -p . && tsc -p client",
  });
  const dependency: string = manifest.dependencies.platform;
  expect(dependency).toMatch(/^file:vendor\/platform-.*\.tgz$/);
  const packed = sh(`tar -tzf ${dependency.slice("file:".length)}`, app).split("\n");
  for (const file of [
    "package/package.json",
    "package/dist/cli/bin.js",
    "package/dist/runtime/index.js",
    "package/dist/sdk/server/index.d.ts",
    "package/dist/sdk/client/index.d.ts",
    "package/dist/sdk/client/node.js",
    "package/dist/sdk/legacy/index.d.ts",
    "package/docs/capsules.md",
    "package/README.md",
  ])
    expect(packed, file).toContain(file);
  expect(packed.filter((file) => /\.test(-d)?\.(js|d\.ts)$/.test(file))).toEqual([]);

  sh("npm install", app);
  const resolved = createRequire(join(app, "package.json")).resolve("platform/package.json");
  expect(resolved).toBe(join(app, "node_modules", "platform", "package.json"));
  expect(existsSync(join(app, "node_modules", "@types", "react"))).toBe(false);

  // The typed client file makes the check prove that platform/client's types resolve (an `any`
  // would leave the @ts-expect-error unused), and --skipLibCheck false that they need neither
  // @types/react nor @types/node, and platform/server's not even the DOM.
  writeFileSync(join(app, "client", "call.ts"), TYPED_CLIENT);
  sh("npm run typecheck", app);
  sh("npx tsc -p . --skipLibCheck false", app);
  sh("npx tsc -p client --skipLibCheck false", app);

  const port = await freePort();
  const started = Date.now();
  const server = startDev(app, port);
  dev = server.child;
  await waitFor(server.output, server.child, /platform dev: serving/, 60_000);
  console.log(`npm run dev: serving after ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const base = `http://localhost:${port}`;
  expect((await sendRequest(`${base}/health`)).text()).toBe("ok");
  // The scaffold's page: its script is built from client/main.ts, platform/client's browser
  // entry (React included: npm installs it as the package's peer) bundled in.
  const page = await sendRequest(`${base}/main.js`);
  expect(page.status, `${page.text().slice(0, 300)}\n${server.output()}`).toBe(200);
  expect(page.headers["content-type"]).toContain("javascript");
  expect(page.text()).toContain("useSyncExternalStore");
  const { token } = (await sendRequest(`${base}/__platform/auth/guest`, { method: "POST" })).json<{
    token: string;
  }>();
  const post = (path: string, body: unknown) =>
    sendRequest(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  const added = await post("/api/mutation/add", { text: "over HTTP" });
  expect(added.status, added.text()).toBe(200);

  writeFileSync(join(app, "call.mjs"), CLIENT_SCRIPT);
  const called = JSON.parse(sh(`node call.mjs ${base}`, app)) as {
    id: string;
    notes: Array<{ text: string }>;
  };
  expect(typeof called.id).toBe("string");
  expect(called.notes.map((note) => note.text)).toEqual(["through platform/client", "over HTTP"]);

  const listed = await post("/api/query/list", {});
  expect(listed.json<{ value: Array<{ text: string }> }>().value.map((note) => note.text)).toEqual([
    "through platform/client",
    "over HTTP",
  ]);
  await stopDev();
  expect(server.child.exitCode ?? server.child.signalCode).not.toBeNull();
}, 1_800_000);
