import type { Command } from "commander";
import { registerStorageDelete } from "./delete.js";
import { registerStorageGet } from "./get.js";
import { registerStorageList } from "./list.js";
import { registerStoragePut } from "./put.js";

/** `platform storage list | put | get | delete` (docs/cli.md), one file each. */
export function registerStorage(program: Command): void {
  const storage = program
    .command("storage")
    .description("list, upload, download and delete stored files of the dev server or a hosted app");
  registerStorageList(storage);
  registerStoragePut(storage);
  registerStorageGet(storage);
  registerStorageDelete(storage);
}
