// Test setup: the browser tests drive Debian's Chromium (/usr/bin/chromium) with playwright-core,
// never a downloaded browser. Installs it with apt-get when missing (these machines run as root).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const CHROMIUM = "/usr/bin/chromium";
if (!existsSync(CHROMIUM)) {
  if (process.getuid?.() !== 0) {
    console.error(
      `${CHROMIUM} is missing; install Debian's chromium package (apt-get install chromium) to run the browser tests.`,
    );
    process.exit(1);
  }
  console.log("Installing Debian's chromium for the browser tests...");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const args of [
    ["update", "-qq"],
    ["install", "-y", "-qq", "chromium"],
  ]) {
    const result = spawnSync("apt-get", args, { stdio: "inherit", env });
    if (result.status !== 0) process.exit(result.status ?? 1);
  }
}
