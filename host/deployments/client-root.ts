import { lstat, realpath } from "node:fs/promises";
import { dirname, relative, sep } from "node:path";

/**
 * Where folder `root` leads when it is a symbolic link out of the folder that holds it or into one
 * of its dot-folders (`client -> .git`, whose `config` may hold a remote's credentials), else
 * undefined (a real folder, a link that stays beside it, or nothing there). A project's `client`
 * that is such a link is neither published by `platform deploy` nor served by `platform dev`: a
 * template's `client -> ../../.ssh` published the developer's keys, and `client -> /proc/self`
 * served dev's environment to the app's own page (an attack review). Links inside `client/` are
 * checked file by file. A module importing only Node: the CLI uses it, and must not load the host.
 */
export async function rootLinkedOutside(root: string): Promise<string | undefined> {
  const link = await lstat(root).catch(() => undefined);
  if (!link?.isSymbolicLink()) return undefined;
  const [target, holder] = await Promise.all([
    realpath(root).catch(() => root),
    realpath(dirname(root)).catch(() => dirname(root)),
  ]);
  if (!target.startsWith(holder + sep)) return target;
  return relative(holder, target)
    .split(sep)
    .some((name) => name.startsWith("."))
    ? target
    : undefined;
}
