import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { Command } from "commander";
import { printable } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { runAction } from "../output.js";
import { type OwnManifest, ownManifest, packOwnPackage } from "../own-package.js";

const SERVER = `import { capsule, endpoint, PlatformError, string, table, text, userId } from "platform/server";

const schema = {
  // userId(): a guest's notes move to the account it signs in to.
  notes: table({ text: string(), author: userId() }),
};

export default capsule({
  schema,
  queries: {
    list: async (ctx) => ctx.db.notes.order("desc").take(50),
  },
  mutations: {
    add: async (ctx, args: { text: string }) => {
      const me = ctx.auth.requireIdentity();
      if (typeof args.text !== "string" || args.text.trim() === "")
        throw new PlatformError("bad_request", "Write some text first.");
      return ctx.db.notes.insert({ text: args.text.trim(), author: me.userId });
    },
  },
  endpoints: {
    health: endpoint({ method: "GET", path: "/health", readOnly: true }, async () => text("ok")),
  },
});
`;

const CLIENT_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Notes</title>
  <link rel="icon" href="data:,">
  <style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem}li{margin:.3rem 0}#error{color:#b00020}</style>
</head>
<body>
  <h1>Notes</h1>
  <form id="add"><input id="text" placeholder="Write a note" required> <button>Add</button></form>
  <p id="error" role="alert"></p>
  <ul id="notes"></ul>
  <script type="module" src="/main.js"></script>
</body>
</html>
`;

/**
 * The page's script, built to /main.js by \`platform dev\` and \`platform deploy\`: platform/client
 * signs in as a guest, keeps the token, and the list is a live subscription (every tab sees a new
 * note at once). React apps use the hooks the same way (docs/client.md).
 */
const CLIENT_SCRIPT = `import { createClient } from "platform/client";
import type app from "../server/index";

const client = createClient<typeof app>();
const form = document.querySelector<HTMLFormElement>("#add");
const input = document.querySelector<HTMLInputElement>("#text");
const list = document.querySelector<HTMLUListElement>("#notes");
const error = document.querySelector<HTMLParagraphElement>("#error");
if (!form || !input || !list || !error) throw new Error("index.html is missing #add, #text, #notes or #error.");

client.subscribe(
  "list",
  {},
  (notes) => {
    error.textContent = "";
    const items = notes.map((note) => Object.assign(document.createElement("li"), { textContent: note.text }));
    list.replaceChildren(...items);
  },
  (failed) => {
    error.textContent = failed.message;
  },
);

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await client.mutation("add", { text: input.value });
    input.value = "";
    error.textContent = "";
  } catch (failed) {
    error.textContent = failed instanceof Error ? failed.message : String(failed);
  }
});
`;

const readme = (name: string) => `# ${name}

A capsule for the platform.

\`\`\`sh
npm install          # the platform package, from the tarball in vendor/
npm run typecheck    # tsc over server/ (as the isolate runs it) and client/ (for the browser)
npm run dev          # http://localhost:3000: the page in client/, the API at /api/*
npm run deploy -- --host <url>
\`\`\`

- \`server/index.ts\`: the schema, queries, mutations and endpoints.
- \`client/index.html\` and \`client/main.ts\` (built to \`/main.js\`): a page that signs in as a
  guest with \`platform/client\`, and lists notes live and adds them.
- \`vendor/\`: the platform package this app was created with (\`npm pack\` of it); keep it.
- \`.env.platform.server\`: server-only values for \`ctx.env\` (keep it out of version control).
`;

/**
 * The app's package.json: \`platform\` from the vendored tarball (the npm registry's \`platform\` is an
 * unrelated package), TypeScript for \`npm run typecheck\`, the scripts the README names, and the
 * platform's native addons allowed to build.
 */
function packageJson(name: string, tarball: string, own: OwnManifest): string {
  const manifest = {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: { dev: "platform dev", deploy: "platform deploy", typecheck: "tsc -p . && tsc -p client" },
    dependencies: { platform: `file:vendor/${tarball}` },
    devDependencies: { typescript: own.typescript },
    allowScripts: own.allowScripts,
  };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/** Compiler options both checks share: strict, `platform/*` resolved through the package's exports as esbuild does. */
const COMPILER_OPTIONS = {
  target: "ES2022",
  module: "ESNext",
  moduleResolution: "Bundler",
  strict: true,
  noEmit: true,
  isolatedModules: true,
  skipLibCheck: true,
  types: [],
};

/**
 * server/ checked as its isolate runs it: the language alone, no DOM and no Node types (no
 * `setTimeout`, `fetch` or `process` there), with `console` from platform/server. Also what
 * `platform dev`'s background check uses.
 */
const TSCONFIG = `${JSON.stringify(
  { compilerOptions: { ...COMPILER_OPTIONS, lib: ["ES2022"] }, include: ["server"] },
  null,
  2,
)}\n`;

/** client/ checked for the browser: the DOM library and React's JSX (the server's types reach it through its imports). */
const CLIENT_TSCONFIG = `${JSON.stringify(
  { compilerOptions: { ...COMPILER_OPTIONS, lib: ["ES2022", "DOM"], jsx: "react-jsx" }, include: ["."] },
  null,
  2,
)}\n`;

/** A package name npm accepts, made from the folder's name. */
function packageName(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[._-]+|-+$/g, "");
  return name === "" ? "capsule" : name.slice(0, 214);
}

/**
 * `platform init [dir]`: scaffolds a capsule that `platform dev` runs at once, as an npm project
 * of its own (package.json, tsconfig.json, this platform packed into vendor/), so it also installs,
 * type-checks and runs away from any checkout of the platform (docs/own-project.md).
 */
export function registerInit(program: Command): void {
  program
    .command("init")
    .argument("[dir]", "folder to create the capsule in (must be empty or missing)", ".")
    .description(
      "scaffold an app: server/index.ts, client/index.html and main.ts, package.json (with this platform packed into vendor/), tsconfig.json, README.md, .gitignore",
    )
    .addHelpText("after", "\nExamples:\n  platform init my-app && cd my-app && npm install && npm run dev")
    .action((dirArg: string) =>
      runAction(async () => {
        const dir = resolve(dirArg);
        if (existsSync(dir) && readdirSync(dir).length > 0) {
          throw new PlatformError(
            "conflict",
            `${printable(dir)} is not empty; choose a new folder (platform init my-app).`,
          );
        }
        mkdirSync(join(dir, "server"), { recursive: true });
        mkdirSync(join(dir, "client"), { recursive: true });
        writeFileSync(join(dir, "server", "index.ts"), SERVER);
        writeFileSync(join(dir, "client", "index.html"), CLIENT_PAGE);
        writeFileSync(join(dir, "client", "main.ts"), CLIENT_SCRIPT);
        writeFileSync(join(dir, "README.md"), readme(basename(dir)));
        writeFileSync(join(dir, ".gitignore"), ".env.platform.server\nnode_modules/\n");
        mkdirSync(join(dir, "vendor"));
        const tarball = packOwnPackage(join(dir, "vendor"));

        writeFileSync(
          join(dir, "package.json"),
          packageJson(packageName(basename(dir)), tarball, ownManifest()),
        );
        writeFileSync(join(dir, "tsconfig.json"), TSCONFIG);
        writeFileSync(join(dir, "client", "tsconfig.json"), CLIENT_TSCONFIG);
        const enter = dirArg === "." ? "" : `cd ${printable(dirArg)} && `;
        process.stdout.write(
          `created a capsule in ${printable(dir)}\nnext: ${enter}npm install && npm run dev\n`,
        );
      }),
    );
}
