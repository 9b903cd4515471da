/**
 * A build (`platform dev`'s and `platform deploy`'s, of `server/` and of `client/`) reads only the
 * project's own files, the platform's SDK and packages from node_modules: a cloned template whose
 * `client/notes.txt -> ~/.ssh/id_rsa` is imported as text, or whose `../` import leaves the
 * folder, fails to build, naming the import and where it leads, and the secret reaches no output.
 */
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { bundleCapsule } from "./bundle.js";
import { buildClientApp } from "./client-build.js";
import { collectClientFiles } from "./client-files.js";

const SECRET = "PRIVATE-KEY-5f3a9c";
const SERVER = `import { capsule, endpoint, text } from "platform/server";
import banner from "./banner.txt" with { type: "text" };
export default capsule({
  schema: {},
  endpoints: { banner: endpoint({ method: "GET", path: "/banner", readOnly: true }, async () => text(banner)) },
});
`;

let root: string;
let app: string;
let secret: string;
let out: string;

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), "platform-project-files-")));
  app = join(root, "template");
  out = join(root, "out");
  secret = join(root, "home", ".ssh", "id_rsa");
  await mkdir(join(root, "home", ".ssh"), { recursive: true });
  await writeFile(secret, SECRET);
  await mkdir(join(app, "server"), { recursive: true });
  await mkdir(join(app, "client"), { recursive: true });
  await mkdir(out);
  await writeFile(join(app, "client", "index.html"), "<!doctype html>");
});
afterEach(() => rm(root, { recursive: true, force: true }));

/** The text of every file under `dir`. */
async function everything(dir: string): Promise<string> {
  const files = await readdir(dir, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(
    files.filter((f) => f.isFile()).map((f) => readFile(join(f.parentPath, f.name), "utf8")),
  );
  return texts.join("\n");
}

/** The build's failure, checked to hold no byte of the secret. */
async function failure(build: Promise<unknown>): Promise<string> {
  const error = await build.then(
    () => expect.unreachable("the build succeeded"),
    (e: unknown) => e as Error & { code: string },
  );
  expect(error.code).toBe("bad_request");
  expect(error.message).not.toContain(SECRET);
  expect(await everything(out)).not.toContain(SECRET);
  return error.message;
}

const advice = "Copy what it needs into the project (a copy, not a symbolic link)";

it("refuses a symbolic link in client/ out of the project, in dev's build and deploy's", async () => {
  await symlink(join("..", "..", "home", ".ssh", "id_rsa"), join(app, "client", "notes.txt"));
  await writeFile(
    join(app, "client", "main.ts"),
    'import notes from "./notes.txt" with { type: "text" };\ndocument.body.append(notes);\n',
  );
  const refused = `client/main.ts:1:18: "./notes.txt" (client/notes.txt) leads to ${secret}, outside the project folder ${app}`;
  const dev = await failure(buildClientApp(app, out));
  expect(dev).toContain(refused);
  expect(dev).toContain(advice);
  const deploy = await failure(collectClientFiles(app, { warn: () => {} }));
  expect(deploy).toContain(refused);
});

it("refuses a symbolic link in server/ out of the project: the capsule does not build", async () => {
  await symlink(join("..", "..", "home", ".ssh", "id_rsa"), join(app, "server", "banner.txt"));
  await writeFile(join(app, "server", "index.ts"), SERVER);
  const message = await failure(bundleCapsule(app));
  expect(message).toContain(
    `server/index.ts:2:19: "./banner.txt" (server/banner.txt) leads to ${secret}, outside the project folder ${app}`,
  );
  expect(message).toContain(advice);
});

it("refuses ../ imports and variable imports that reach out of the project", async () => {
  await writeFile(join(app, "server", "index.ts"), SERVER.replace("./banner.txt", "../../home/.ssh/id_rsa"));
  expect(await failure(bundleCapsule(app))).toContain(
    `"../../home/.ssh/id_rsa" leads to ${secret}, outside the project folder ${app}`,
  );
  // esbuild expands `./files/${name}` itself, without asking plugins to resolve each match.
  await mkdir(join(app, "server", "files"));
  await writeFile(join(app, "server", "files", "a.txt"), "a");
  await symlink(secret, join(app, "server", "files", "b.txt"));
  await writeFile(
    join(app, "server", "index.ts"),
    SERVER.replace('import banner from "./banner.txt" with { type: "text" };', "").replace(
      "text(banner)",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the capsule's source, not this test's
      "text(String(await import(`./files/${String(Math.random())}.txt`)))",
    ),
  );
  expect(await failure(bundleCapsule(app))).toContain(
    `A file that an import with a variable path matched leads to ${secret}, outside the project folder`,
  );
});

it("builds from packages in node_modules, a workspace's linked from outside the project included", async () => {
  // npm workspaces: the monorepo's node_modules/@acme/shared -> ../../packages/shared.
  const shared = join(root, "packages", "shared");
  await mkdir(shared, { recursive: true });
  await writeFile(
    join(shared, "package.json"),
    '{"name":"@acme/shared","version":"1.0.0","main":"index.js"}',
  );
  await writeFile(join(shared, "index.js"), 'export { greeting } from "./greeting.js";\n');
  await writeFile(join(shared, "greeting.js"), 'export const greeting = "hello from shared";\n');
  await mkdir(join(root, "node_modules", "@acme"), { recursive: true });
  await symlink(join("..", "..", "packages", "shared"), join(root, "node_modules", "@acme", "shared"));
  await writeFile(
    join(app, "server", "index.ts"),
    'import { capsule } from "platform/server";\nimport { greeting } from "@acme/shared";\nexport default capsule({ schema: {}, queries: { hi: async () => greeting } });\n',
  );
  expect((await bundleCapsule(app)).code).toContain("hello from shared");
});

it("refuses a package in node_modules that is a link to a folder holding no package", async () => {
  await mkdir(join(app, "node_modules"));
  await symlink(join("..", "..", "home", ".ssh"), join(app, "node_modules", "keys"));
  await writeFile(join(app, "server", "index.ts"), SERVER.replace("./banner.txt", "keys/id_rsa"));
  expect(await failure(bundleCapsule(app))).toContain(
    `"keys/id_rsa" leads to ${secret}, outside the project folder ${app}`,
  );
});

it("refuses a package linked to a folder holding the project, and every package's dot-files", async () => {
  // `node_modules/x -> ../..`, a parent with a package.json (a home folder after a stray `npm i`,
  // or a library's example app's `file:..`): every file above the project counted as the package's.
  await writeFile(join(root, "package.json"), '{"name":"parent","version":"1.0.0","main":"lib.js"}');
  await writeFile(join(root, "lib.js"), 'export const greeting = "hello from the parent";\n');
  await writeFile(join(root, ".env"), `TOKEN=${SECRET}`);
  await mkdir(join(app, "node_modules"));
  await symlink(join("..", ".."), join(app, "node_modules", "x"));
  const importing = (what: string) =>
    writeFile(
      join(app, "server", "index.ts"),
      `import { capsule } from "platform/server";\nimport what from ${JSON.stringify(what)};\nexport default capsule({ schema: {}, queries: { hi: async () => String(what) } });\n`,
    );
  await importing("x");
  expect(await failure(bundleCapsule(app))).toContain(
    `"x" leads to ${join(root, "lib.js")}, outside the project folder`,
  );
  await writeFile(join(app, "server", "index.ts"), SERVER.replace("./banner.txt", "x/.env"));
  expect(await failure(bundleCapsule(app))).toContain(`"x/.env" leads to ${join(root, ".env")}`);
  // Another project linked as a package builds, but not its dot-files.
  const other = join(root, "other");
  await mkdir(other);
  await writeFile(join(other, "package.json"), '{"name":"other","version":"1.0.0","main":"index.js"}');
  await writeFile(join(other, "index.js"), 'export default "hello from other";\n');
  await writeFile(join(other, ".env"), `TOKEN=${SECRET}`);
  await symlink(join("..", "..", "other"), join(app, "node_modules", "other"));
  await importing("other");
  expect((await bundleCapsule(app)).code).toContain("hello from other");
  await writeFile(
    join(app, "server", "index.ts"),
    `import greeting from "other";\n${SERVER.replace("./banner.txt", "other/.env")}`.replace(
      "text(banner)",
      "text(banner + greeting)",
    ),
  );
  expect(await failure(bundleCapsule(app))).toContain(`"other/.env" leads to ${join(other, ".env")}`);
});

it("refuses the project's own dot-files: its server env is never bundled into the public main.js", async () => {
  // A template's client/main.ts imported the developer's `.env.platform.server` as text: every
  // server secret published in `main.js`.
  await writeFile(join(app, ".env.platform.server"), `API_KEY=${SECRET}`);
  await writeFile(
    join(app, "client", "main.ts"),
    'import env from "../.env.platform.server" with { type: "text" };\nconsole.log(env);\n',
  );
  const dotFile = `leads to ${join(app, ".env.platform.server")}, a dot-file or a file in a dot-folder`;
  expect(await failure(buildClientApp(app, out))).toContain(dotFile);
  expect(await failure(collectClientFiles(app))).toContain(dotFile);
  await writeFile(join(app, "server", "index.ts"), SERVER.replace("./banner.txt", "../.env.platform.server"));
  expect(await failure(bundleCapsule(app))).toContain(dotFile);
});

it("leaves esbuild's own resolve as it is: browser: false mappings, optional requires, the tsconfig's settings", async () => {
  // Answered by the check, these were lost: `"util": false` failed the build ("returned a
  // non-absolute path: util"), an optional require of a missing package failed it, and the
  // project's tsconfig no longer reached its files (a review).
  const lib = join(app, "node_modules", "legacy-lib");
  await mkdir(lib, { recursive: true });
  await writeFile(
    join(lib, "package.json"),
    '{"name":"legacy-lib","version":"1.0.0","main":"index.js","browser":{"util":false,"./node-only.js":false}}',
  );
  await writeFile(
    join(lib, "index.js"),
    'const util = require("util");\nconst nodeOnly = require("./node-only.js");\nlet extra = "none";\ntry { extra = require("not-installed"); } catch {}\nmodule.exports = "legacy-lib " + typeof util + " " + typeof nodeOnly + " " + extra;\n',
  );
  await writeFile(join(lib, "node-only.js"), 'module.exports = "NODE-ONLY-CODE";\n');
  await writeFile(
    join(app, "tsconfig.json"),
    '{"compilerOptions":{"jsx":"react-jsx","jsxImportSource":"my-jsx"}}',
  );
  const jsx = join(app, "node_modules", "my-jsx");
  await mkdir(jsx, { recursive: true });
  await writeFile(join(jsx, "package.json"), '{"name":"my-jsx","version":"1.0.0"}');
  await writeFile(join(jsx, "jsx-runtime.js"), 'export const jsx = () => "MY-JSX-RUNTIME";\n');
  await writeFile(
    join(app, "client", "main.tsx"),
    'import label from "legacy-lib";\ndocument.body.append(label, String(<b />));\n',
  );
  await buildClientApp(app, out);
  const built = await everything(out);
  expect(built).toContain("legacy-lib ");
  expect(built).not.toContain("NODE-ONLY-CODE");
  expect(built).toContain("MY-JSX-RUNTIME");
});
