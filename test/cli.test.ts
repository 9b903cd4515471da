import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLI } from "./helpers/cli.js";

function platform(...args: string[]) {
  return spawnSync(process.execPath, ["--import", "tsx", "cli/bin.ts", ...args], { encoding: "utf8" });
}

describe("platform command", () => {
  it("prints its version", () => {
    const result = platform("--version");
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe(
      (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version,
    );
  });

  it("runs itself with --no-node-snapshot (isolated-vm needs it on Node 20), --single-threaded-gc and --no-allocation-site-pretenuring", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", "test/helpers/print-node-flags.ts", "x"], {
      encoding: "utf8",
    });
    expect(result.status).toBe(0);
    const flags = JSON.parse(result.stdout) as string[];
    expect(flags).toContain("--no-node-snapshot");
    expect(flags).toContain("--single-threaded-gc");
    expect(flags).toContain("--no-allocation-site-pretenuring");
  });

  it("exits 2 on unknown options, with help on stderr", () => {
    const result = platform("--no-such-flag");
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("unknown option");
  });
});

describe("help", () => {
  it("every command has --help with examples", () => {
    for (const command of [
      ["dev"],
      ["host"],
      ["deploy"],
      ["login"],
      ["logs"],
      ["init"],
      ["auth", "as"],
      ["storage", "list"],
      ["storage", "put"],
      ["storage", "get"],
      ["storage", "delete"],
    ]) {
      const result = spawnSync(process.execPath, [...CLI, ...command, "--help"], { encoding: "utf8" });
      expect(result.status, command.join(" ")).toBe(0);
      expect(result.stdout, command.join(" ")).toContain("Examples:");
    }
  });
});
