import { existsSync, realpathSync } from "node:fs";
import { lstat, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import type { OnResolveArgs, OnResolveResult, Plugin } from "esbuild";

/** Marks the resolve this plugin asks of esbuild, so that it is not checked twice. */
const OWN_RESOLVE = "platform-project-files";

const inside = (root: string, path: string) => path === root || path.startsWith(root + sep);

/** `react` of `react/jsx-runtime`, `@scope/name` of `@scope/name/sub`; undefined for a path. */
function packageName(specifier: string): string | undefined {
  if (specifier.startsWith(".") || isAbsolute(specifier)) return undefined;
  return /^(@[^/]+\/[^/]+|[^/]+)/.exec(specifier)?.[1];
}

/**
 * The real path of the folder `node_modules/<name>` that Node's resolution finds first from `dir`
 * upwards, when it holds a `package.json` (a package, as npm, pnpm, yarn and workspaces make
 * them); undefined when there is none or it is no package (`node_modules/x -> ~/.ssh`).
 */
async function packageFolder(name: string, dir: string): Promise<string | undefined> {
  for (let at = dir; ; at = dirname(at)) {
    if (basename(at) !== "node_modules") {
      const folder = join(at, "node_modules", name);
      if (await lstat(folder).catch(() => undefined)) {
        const real = await realpath(folder).catch(() => undefined);
        return real !== undefined && existsSync(join(real, "package.json")) ? real : undefined;
      }
    }
    if (dirname(at) === at) return undefined;
  }
}

/**
 * Whether `real`, inside `folder`, is a dot-file or lies in a dot-folder (`.env`, `.git/config`)
 * before any `node_modules` (whose `.pnpm` and `.bin` are the package manager's).
 */
function hiddenBelow(folder: string, real: string): boolean {
  for (const name of relative(folder, real).split(sep)) {
    if (name === "node_modules") return false;
    if (name.startsWith(".")) return true;
  }
  return false;
}

/** The import as the developer wrote it and where its path points, for the refusal. */
function describeImport(project: string, args: OnResolveArgs, real: string): string {
  if (args.kind === "entry-point") return relative(project, args.path) || args.path;
  if (packageName(args.path) !== undefined || args.resolveDir === "") return `"${args.path}"`;
  const named = resolve(args.resolveDir, args.path);
  if (named === real) return `"${args.path}"`;
  return `"${args.path}" (${inside(project, named) ? relative(project, named) : named})`;
}

/**
 * An esbuild plugin that builds only from the project's own files: every file a build reads must
 * have its real path (symbolic links followed) inside `projectDir`, inside one of `trusted` (the
 * platform package whose SDK capsules import), or inside a package that a package import
 * (`react`, `@acme/shared`) reached through a `node_modules` folder. A link or a `../` import
 * leading elsewhere is refused with where it leads: esbuild follows links, so a cloned template's
 * `client/notes.txt -> ~/.ssh/id_rsa` imported as text was published in `main.js`, and one in
 * `server/` bundled into the capsule, where an endpoint could serve it (an attack review).
 * Packages are trusted as the package manager links them, which is how a monorepo's workspace
 * packages live outside the app's folder: a `node_modules` the project was cloned with is
 * trusted too, but only folders holding a `package.json` count as packages there, never one
 * holding the project; and no dot-file, nor a file in a dot-folder (`.env`, `.git/`, `.npmrc`), is
 * read from any of these folders.
 */
export function projectFilesOnly(projectDir: string, trusted: readonly string[]): Plugin {
  return {
    name: "platform-project-files",
    setup(builder) {
      const project = realpathSync(projectDir);
      // The folders a build reads from (packages join as imports reach them), none of their
      // dot-files or dot-folders: a template's `client/main.ts` bundled the developer's
      // `../.env.platform.server` into the public `main.js`, and `node_modules/x -> ../..` made a
      // parent's `.env` a package file (an attack review).
      const roots = [project, ...trusted.map((root) => realpathSync(root))];
      const allowed = (real: string) => roots.some((root) => inside(root, real) && !hiddenBelow(root, real));
      const refusal = (what: string, real: string) =>
        roots.some((root) => inside(root, real))
          ? `${what} leads to ${real}, a dot-file or a file in a dot-folder: a build never reads those (.env files, .git), so that no secret of the project is bundled or published. Rename it if it belongs to the app.`
          : `${what} leads to ${real}, outside the project folder ${project}: a build reads only the project's files and packages from node_modules, so that nothing else on this machine is published by mistake. Copy what it needs into the project (a copy, not a symbolic link), or make it a package the project depends on (an npm workspace, say).`;

      builder.onResolve({ filter: /.*/ }, async (args): Promise<OnResolveResult | undefined> => {
        // Other plugins' own resolves (pluginData set) are checked as the import that asked them.
        if (args.pluginData !== undefined) return undefined;
        const found = await builder.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          namespace: args.namespace,
          resolveDir: args.resolveDir,
          with: args.with,
          pluginData: OWN_RESOLVE,
        });
        // Only looked at, never answered: an answer of ours would drop what esbuild's own resolve
        // attaches (a `browser: false` mapping, the file's tsconfig and package.json settings), and
        // an import that fails (an optional `require` in a `try`) is esbuild's to report or forgive.
        if (found.errors.length > 0 || found.external || found.namespace !== "file") return undefined;
        if (!isAbsolute(found.path)) return undefined;
        const real = await realpath(found.path).catch(() => found.path);
        if (allowed(real)) return undefined;
        const name = packageName(args.path);
        if (name !== undefined) {
          for (const from of [args.resolveDir, project]) {
            const folder = from === "" ? undefined : await packageFolder(name, from);
            // One holding the project (`node_modules/x -> ../..`, a `file:..` dependency) would
            // open every file above it: not a package here.
            if (folder !== undefined && !inside(folder, project) && inside(folder, real)) {
              if (hiddenBelow(folder, real)) break;
              // Its files are allowed from now on, as onLoad reads them.
              roots.push(folder);
              return undefined;
            }
          }
        }
        return { errors: [{ text: refusal(describeImport(project, args, real), real) }] };
      });

      // What a resolve above did not see (a glob import's matches) is held to the same folders.
      builder.onLoad({ filter: /.*/, namespace: "file" }, async (args) => {
        const real = await realpath(args.path).catch(() => args.path);
        if (allowed(real)) return undefined;
        const what = "A file that an import with a variable path matched";
        return { errors: [{ text: refusal(what, real) }] };
      });
    },
  };
}
