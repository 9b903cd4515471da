/**
 * Whether a file of `client/` is published (`platform deploy` uploads it, `platform dev` serves
 * it): the app's sources (`.ts`, `.tsx`, `.jsx`, `.mts`, `.cts`, `tsconfig*.json`) are built into
 * `main.js` instead, and dot-files and dot-folders (`.env`, `.DS_Store`, `.git`) may hold secrets
 * or junk, except `.well-known/`, which sites publish on purpose. A module of its own, importing
 * nothing: the CLI uses it, and must not load the host to.
 */
export function isPublishedClientPath(path: string): boolean {
  const names = path.split("/");
  if (names.some((name, i) => name.startsWith(".") && !(i === 0 && name === ".well-known"))) return false;
  const file = names[names.length - 1] ?? "";
  return !/\.(tsx?|jsx|mts|cts)$/.test(file) && !/^tsconfig.*\.json$/.test(file);
}
