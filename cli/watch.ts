import { basename } from "node:path";
import { watch } from "chokidar";

/** How long a folder must stay quiet after a change before it is rebuilt. */
const SETTLE_MS = 100;

/**
 * Editors' scratch files, which never change what a build sees: vim's swap files and its `4913`
 * probe, emacs' `.#` lock files, and `~` backups.
 */
export function isEditorScratch(path: string): boolean {
  const name = basename(path);
  return name.startsWith(".#") || name.endsWith("~") || /\.sw[px]$/.test(name) || name === "4913";
}

/**
 * Calls `onChange` once `folder` has been quiet for {@link SETTLE_MS} after a change below it;
 * resolves (to the function that stops watching) once the folder is being watched; watch errors,
 * at the start too, go to `onError` and watching goes on. chokidar, not `fs.watch`: editors that
 * save by writing a new file and renaming it over the old one (or the old one away first) replace
 * the watched file, and Node 20's recursive `fs.watch` then stops seeing it; chokidar follows the
 * new one (`atomic`). Symbolic links are watched as links, not followed: with `client/root -> /`,
 * chokidar walked the whole disk, and its second error (EACCES on `/proc/1/exe`), with no listener
 * yet, ended `platform dev` within seconds (an attack review).
 */
export async function watchFolder(
  folder: string,
  onChange: () => void,
  onError: (error: unknown) => void,
  /** Only the folder's own file of this name (created, changed or removed), nothing below it. */
  onlyFile?: string,
): Promise<() => Promise<void>> {
  const ignored = onlyFile
    ? (path: string) => path !== folder && basename(path) !== onlyFile
    : isEditorScratch;
  const watcher = watch(folder, {
    ignoreInitial: true,
    atomic: true,
    ignored,
    followSymlinks: false,
    ...(onlyFile ? { depth: 0 } : {}),
  });
  watcher.on("error", onError);
  let timer: NodeJS.Timeout | undefined;
  watcher.on("all", () => {
    clearTimeout(timer);
    timer = setTimeout(onChange, SETTLE_MS);
  });
  await new Promise<void>((resolve) => watcher.once("ready", resolve));
  return async () => {
    clearTimeout(timer);
    await watcher.close();
  };
}
