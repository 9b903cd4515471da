import { defineConfig } from "vitest/config";
import { REQUIRED_NODE_FLAGS } from "./cli/node-flags.js";

export default defineConfig({
  test: {
    include: [
      "sdk/**/*.test.ts",
      "cli/**/*.test.ts",
      "host/**/*.test.ts",
      "runtime/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    execArgv: [...REQUIRED_NODE_FLAGS],
  },
});
