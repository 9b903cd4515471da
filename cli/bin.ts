#!/usr/bin/env node
/** Entry point of the `platform` command. */
import { fileURLToPath } from "node:url";
import { ensureNodeFlags } from "./node-flags.js";
import { createProgram } from "./program.js";

if (!ensureNodeFlags(fileURLToPath(import.meta.url))) {
  await createProgram().parseAsync(process.argv);
}
