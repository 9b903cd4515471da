/**
 * A private PostgreSQL server on loopback for tests and benchmarks: `initdb` into a temporary
 * folder and `pg_ctl start` on a free port, using Debian's postgresql package (which `npm test`
 * installs when missing; see scripts/ensure-test-packages.mjs). As root, the server runs as the
 * `postgres` user, since PostgreSQL refuses to run as root.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chown, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.js";

const run = promisify(execFile);

/** A running private server. */
export interface LocalPostgres {
  url: string;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
  /** Stops the server, keeping its data (clients see it go away), until {@link resume}. */
  suspend(): Promise<void>;
  /** Starts the suspended server again on the same port with the same data. */
  resume(): Promise<void>;
  /**
   * Stops every process of the server (SIGSTOP) without closing a connection: clients see a
   * database that no longer answers, as behind a network that drops everything, until {@link thaw}.
   */
  freeze(): Promise<void>;
  /** Lets the frozen server go on (SIGCONT). */
  thaw(): Promise<void>;
}

/** The folder of PostgreSQL's server programs (`initdb`, `pg_ctl`), or undefined when not installed. */
export function postgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : undefined;
}

/**
 * Starts a server; throws with a clear message when PostgreSQL is not installed. `settings` are
 * more `-c name=value` server settings (a benchmark loading `pg_stat_statements`, say).
 */
export async function startLocalPostgres(settings: string[] = []): Promise<LocalPostgres> {
  const bin = postgresBinDir();
  if (!bin)
    throw new Error(
      "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); apt-get install postgresql.",
    );
  const dir = await mkdtemp(join(tmpdir(), "platform-pg-"));
  const root = process.getuid?.() === 0;
  const user = root ? (await run("id", ["-u", "postgres"])).stdout.trim() : undefined;
  if (root && user) {
    const group = (await run("id", ["-g", "postgres"])).stdout.trim();
    await chown(dir, Number(user), Number(group));
  }
  const as = (program: string, args: string[]) =>
    root
      ? run("runuser", ["-u", "postgres", "--", join(bin, program), ...args])
      : run(join(bin, program), args);
  const data = join(dir, "data");
  await as("initdb", ["-D", data, "-A", "trust", "-U", "platform", "-E", "UTF8", "--locale=C", "--no-sync"]);
  const port = await freePort();
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c max_connections=400",
    "-c shared_buffers=64MB",
    ...settings.map((setting) => `-c ${setting}`),
  ].join(" ");
  const start = () => as("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-w", "start"]);
  await start();
  let frozen: number[] = [];
  return {
    url: `postgres://platform@127.0.0.1:${port}/postgres`,
    freeze: async () => {
      const postmaster = Number((await readFile(join(data, "postmaster.pid"), "utf8")).split("\n")[0]);
      // The postmaster first, so that it starts no process meanwhile.
      process.kill(postmaster, "SIGSTOP");
      frozen = [postmaster, ...childrenOf(postmaster)];
      for (const pid of frozen) process.kill(pid, "SIGSTOP");
    },
    thaw: async () => {
      for (const pid of frozen.reverse()) process.kill(pid, "SIGCONT");
      frozen = [];
    },
    suspend: async () => {
      await as("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    },
    resume: async () => {
      await start();
    },
    stop: async () => {
      await as("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The processes whose parent is `parent` (Linux's /proc). */
function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // The fields after the command name, which is in parentheses and may hold anything.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[1]) === parent) children.push(Number(entry));
  }
  return children;
}
