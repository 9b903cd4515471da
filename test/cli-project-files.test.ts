/**
 * What `platform dev` and `platform deploy` read of a project folder that came from someone else
 * (a cloned template): nothing outside it reaches a build, the host or the terminal. Run as the
 * built CLI against real hosts (`platform dev`'s own, and a test host for deploys).
 */
import { cp, mkdir, mkdtemp, readFile, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { runCliAsync, startDev } from "./helpers/cli.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

const SECRET = "PRIVATE-KEY-0c61d2";

let host: TestHost;
let root: string;
let secret: string;

beforeAll(async () => {
  host = await startTestHost();
  root = await realpath(await mkdtemp(join(tmpdir(), "platform-cli-project-files-")));
  secret = join(root, "home", ".ssh", "id_rsa");
  await mkdir(join(root, "home", ".ssh"), { recursive: true });
  await writeFile(secret, SECRET);
});
afterAll(async () => {
  await host.dispose();
  await rm(root, { recursive: true, force: true });
});

/** A copy of `fixture` in a folder of its own under the test's root, named `name`. */
async function template(fixture: string, name: string): Promise<string> {
  const app = join(root, name);
  await cp(join("fixtures", fixture), app, { recursive: true });
  return app;
}

/** `platform deploy <app>` to the test host as deployment `id`, with the operator's token. */
function deploy(app: string, id: string) {
  return runCliAsync(["deploy", app, "--host", host.url, "--name", id], {
    PLATFORM_ADMIN_TOKEN: host.adminToken,
    PLATFORM_CONFIG_DIR: join(root, "no-config"),
  });
}

/** Resolves once `check` holds, asked again every 50 ms; fails after 30 s. */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${check}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A template whose client/main.ts imports `client/notes.txt -> ../../home/.ssh/id_rsa` as text. */
async function linkingTemplate(name: string): Promise<string> {
  const app = await template("todo", name);
  await mkdir(join(app, "client"));
  await writeFile(join(app, "client", "index.html"), '<!doctype html><script src="/main.js"></script>');
  await symlink(join("..", "..", "home", ".ssh", "id_rsa"), join(app, "client", "notes.txt"));
  await writeFile(
    join(app, "client", "main.ts"),
    'import notes from "./notes.txt" with { type: "text" };\ndocument.body.append(notes);\n',
  );
  return app;
}

it("platform deploy refuses a client that imports a link out of the project, and sends nothing", async () => {
  const app = await linkingTemplate("deploy-link");
  const deployed = await deploy(app, "linked");
  expect(deployed.status, deployed.stderr).toBe(1);
  expect(deployed.stderr).toContain(
    `error: bad_request: Client build failed:\n  client/main.ts:1:18: "./notes.txt" (client/notes.txt) leads to ${secret}, outside the project folder ${app}`,
  );
  expect(`${deployed.stdout}${deployed.stderr}`).not.toContain(SECRET);
  expect(await host.deployments.get("linked")).toBeUndefined();
}, 60_000);

it("platform dev reports the refused import, and serves neither the file nor a build holding it", async () => {
  const app = await linkingTemplate("dev-link");
  const { dev, port } = await startDev(app, ["--no-typecheck"]);
  try {
    expect(dev.output()).toContain(`"./notes.txt" (client/notes.txt) leads to ${secret}`);
    for (const path of ["/main.js", "/notes.txt"]) {
      const response = await sendRequest(`http://localhost:${port}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.text()).not.toContain(SECRET);
    }
    expect(dev.output()).not.toContain(SECRET);
  } finally {
    await dev.stop();
  }
}, 60_000);

/** A copy of fixtures/logs whose .env.platform.server is a link to the developer's AWS credentials. */
async function envLinkTemplate(name: string): Promise<{ app: string; credentials: string }> {
  const app = await template("logs", name);
  const credentials = join(root, "home", ".aws", "credentials");
  await mkdir(join(root, "home", ".aws"), { recursive: true });
  await writeFile(credentials, `AWS_SECRET_ACCESS_KEY=${SECRET}\n`);
  await symlink(credentials, join(app, ".env.platform.server"));
  return { app, credentials };
}

const envRefused = (credentials: string) =>
  `error: bad_request: .env.platform.server is a symbolic link (to ${credentials}); it is read only as a file of its own`;

it("platform deploy refuses a .env.platform.server that is a symbolic link, and sends nothing", async () => {
  const { app, credentials } = await envLinkTemplate("deploy-env");
  const deployed = await deploy(app, "env-linked");
  expect(deployed.status, deployed.stderr).toBe(1);
  expect(deployed.stderr).toContain(envRefused(credentials));
  expect(`${deployed.stdout}${deployed.stderr}`).not.toContain(SECRET);
  expect(await host.deployments.get("env-linked")).toBeUndefined();
}, 60_000);

it("platform dev refuses a .env.platform.server that is a symbolic link until a file replaces it", async () => {
  const { app, credentials } = await envLinkTemplate("dev-env");
  const { dev, port } = await startDev(app, ["--no-typecheck"]);
  try {
    expect(dev.output()).toContain(envRefused(credentials));
    expect(dev.output()).toContain("the capsule did not deploy; nothing is served until a save fixes it");
    const keys = () =>
      sendRequest(`http://localhost:${port}/api/mutation/echoEnv`, { method: "POST", body: "{}" });
    expect((await keys()).status).toBe(404);
    // Renamed over the link in one step: no deploy runs between the link and the file.
    await writeFile(join(app, "env.new"), "OWN_KEY=1\n");
    await rename(join(app, "env.new"), join(app, ".env.platform.server"));
    await dev.waitFor(/deployed /);
    expect((await keys()).json()).toEqual({ value: ["OWN_KEY"] });
    expect(dev.output()).not.toContain(SECRET);
  } finally {
    await dev.stop();
  }
}, 60_000);

it("platform dev neither follows nor fails on client/root -> /: it serves, and rebuilds on a change", async () => {
  const app = await template("todo", "dev-root-link");
  await mkdir(join(app, "client"));
  await writeFile(join(app, "client", "index.html"), "<!doctype html><title>root link</title>");
  await writeFile(join(app, "client", "main.ts"), 'document.title = "first build";\n');
  await symlink("/", join(app, "client", "root"));
  const { dev, port } = await startDev(app, ["--no-typecheck"]);
  try {
    const base = `http://localhost:${port}`;
    expect((await sendRequest(`${base}/`)).text()).toBe("<!doctype html><title>root link</title>");
    const file = join(app, "server", "index.ts");
    await writeFile(file, (await readFile(file, "utf8")).replace("take(50)", "take(49)"));
    await dev.waitFor(/deployed [\s\S]*deployed /);
    const list = await sendRequest(`${base}/api/query/list`, { method: "POST", body: "{}" });
    expect(list.json()).toEqual({ value: [] });
    // client/'s own watcher, the one that walked the disk, sees a change too.
    // (chokidar reports the link itself once, at the start, so a build may come before this one.)
    await writeFile(join(app, "client", "main.ts"), 'document.title = "second build";\n');
    await until(async () => (await sendRequest(`${base}/main.js`)).text().includes("second build"));
    expect(dev.child.exitCode).toBeNull();
    expect(dev.output()).not.toContain("unhandled error");
  } finally {
    await dev.stop();
  }
}, 60_000);

it("platform deploy without .env.platform.server keeps the deployment's values, and says so", async () => {
  // A fresh clone or a CI job has no such file (it is kept out of version control): its deploy
  // wiped the production secrets without a word.
  const app = await template("logs", "env-kept");
  await writeFile(join(app, ".env.platform.server"), "API_KEY=abc\n");
  expect((await deploy(app, "env-kept")).status).toBe(0);
  await rm(join(app, ".env.platform.server"));
  const again = await deploy(app, "env-kept");
  expect(again.status, again.stderr).toBe(0);
  expect(again.stdout).toContain("env: no .env.platform.server, the deployment keeps its values");
  expect((await host.deployments.get("env-kept"))?.env).toEqual({ API_KEY: "abc" });
  // An empty file clears them.
  await writeFile(join(app, ".env.platform.server"), "");
  expect((await deploy(app, "env-kept")).status).toBe(0);
  expect((await host.deployments.get("env-kept"))?.env).toEqual({});
}, 60_000);
