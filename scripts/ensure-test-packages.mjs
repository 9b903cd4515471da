// Test setup: the browser tests drive Debian's Chromium (/usr/bin/chromium) with playwright-core,
// never a downloaded browser; the PostgreSQL tests start a private server from Debian's postgresql
// package. Installs whichever is missing with apt-get (these machines run as root).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";

const CHROMIUM = "/usr/bin/chromium";
const hasPostgres = () =>
  existsSync("/usr/lib/postgresql") &&
  readdirSync("/usr/lib/postgresql").some((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`));

const missing = [];
if (!existsSync(CHROMIUM)) missing.push("chromium");
if (!hasPostgres()) missing.push("postgresql");
if (missing.length > 0) {
  if (process.getuid?.() !== 0) {
    console.error(
      `Missing ${missing.join(" and ")}; install them with apt-get install ${missing.join(" ")} to run every test.`,
    );
    // The PostgreSQL tests then skip with a message; the browser tests need Chromium.
    if (missing.includes("chromium")) process.exit(1);
  } else {
    console.log(`Installing Debian's ${missing.join(" and ")} for the tests...`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    for (const args of [
      ["update", "-qq"],
      ["install", "-y", "-qq", "--no-install-recommends", ...missing],
    ]) {
      const result = spawnSync("apt-get", args, { stdio: "inherit", env });
      if (result.status !== 0) {
        console.error(`apt-get ${args.join(" ")} failed`);
        if (missing.includes("chromium")) process.exit(result.status ?? 1);
      }
    }
  }
}
