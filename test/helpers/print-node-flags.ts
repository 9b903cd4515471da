/** Prints the Node flags this process ended up running with, after `ensureNodeFlags`. */
import { fileURLToPath } from "node:url";
import { ensureNodeFlags } from "../../cli/node-flags.js";

if (!ensureNodeFlags(fileURLToPath(import.meta.url))) console.log(JSON.stringify(process.execArgv));
