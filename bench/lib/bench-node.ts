import { REQUIRED_NODE_FLAGS } from "../../dist/cli/node-flags.js";

/**
 * The arguments of a Node process that runs benchmark `script` as the platform runs: its Node flags
 * (cli/node-flags.ts, the one list of them), `--expose-gc` for the benchmarks that collect between
 * phases, and tsx for the TypeScript.
 */
export function benchNodeArgs(script: string): string[] {
  return [...REQUIRED_NODE_FLAGS, "--expose-gc", "--import", "tsx", script];
}
