/**
 * CPU time of process trees, read from /proc: a `platform host` is a supervisor with a server and a
 * spare server under it, PostgreSQL a postmaster with a backend per connection, and every thread of
 * each is in its process's `utime`+`stime`. Linux only.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime of all its threads, in seconds. */
  cpu: number;
  /** cutime + cstime: CPU of its children that have ended and been waited for, in seconds. */
  children: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may hold spaces; the fields after it are plain.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const field = (n: number) => Number(fields[n - 3]);
    return {
      pid: Number(text.slice(0, text.indexOf(" "))),
      ppid: field(4),
      cpu: (field(14) + field(15)) / TICKS_PER_SECOND,
      children: (field(16) + field(17)) / TICKS_PER_SECOND,
    };
  } catch {
    return undefined; // ended between listing and reading
  }
}

/** Every live process's stat, read at once. */
function allStats(): ProcStat[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((stat): stat is ProcStat => stat !== undefined);
}

/**
 * CPU seconds used so far by each tree rooted at one of `roots` (the root and all its live
 * descendants, plus what their ended children were charged). A process that ended within a
 * measured interval loses its own time from the sum; the trees measured here keep their processes.
 */
export function treeCpu(roots: readonly number[]): number[] {
  const stats = allStats();
  const children = new Map<number, ProcStat[]>();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const byPid = new Map(stats.map((stat) => [stat.pid, stat]));
  return roots.map((root) => {
    let total = 0;
    const stack = [byPid.get(root)].filter((stat): stat is ProcStat => stat !== undefined);
    while (stack.length > 0) {
      const stat = stack.pop() as ProcStat;
      total += stat.cpu + stat.children;
      stack.push(...(children.get(stat.pid) ?? []));
    }
    return total;
  });
}

/** The PostgreSQL postmaster listening on `port`: the `postgres` process whose command line says so. */
export function postmasterPid(port: number): number {
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      const at = argv.indexOf("-p");
      if (argv[0]?.endsWith("postgres") && at >= 0 && argv[at + 1] === String(port)) return Number(name);
    } catch {
      // ended, or not ours to read
    }
  }
  throw new Error(`No postgres process listening on port ${port} found in /proc.`);
}
