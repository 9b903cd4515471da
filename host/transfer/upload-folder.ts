import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * When process `pid` started (clock ticks since boot, from `/proc`), or "0" where that cannot be
 * read (no such process, or not Linux).
 */
function startOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // `pid (name) state ...`: the name may hold anything, so fields are counted after its `)`.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "0";
  } catch {
    return "0";
  }
}

/** Whether process `pid` runs (on this machine, in this PID namespace). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** This process, as upload folders name it: its pid and when it started (pids come again). */
const THIS_PROCESS = `${process.pid}.${startOf(process.pid)}`;

/**
 * Where received import archives wait while they are imported, and written exports while their
 * clients read them: a folder of the host's data (not the system's temporary folder, which may be
 * memory), one subfolder per archive named after the process that writes it (its pid and start
 * time: a container's host is pid 1 after every restart). A subfolder is removed when its import
 * or export ends; a host starting removes those of every process no longer running, never one a
 * running host writes.
 */
export class UploadFolder {
  constructor(readonly path: string) {}

  /** A new private subfolder for one upload (remove it when done). */
  async create(): Promise<string> {
    await mkdir(this.path, { recursive: true, mode: 0o700 });
    return mkdtemp(join(this.path, `${THIS_PROCESS}-`));
  }

  /** Removes every upload a process no longer running left behind; returns how many. */
  async removeLeftovers(): Promise<number> {
    const names = await readdir(this.path).catch(() => []);
    let removed = 0;
    for (const name of names) {
      const [pid = "", start = ""] = (name.split("-")[0] ?? "").split(".");
      const id = Number(pid);
      const live =
        Number.isSafeInteger(id) &&
        id > 0 &&
        (`${id}.${start}` === THIS_PROCESS || (id !== process.pid && running(id) && startOf(id) === start));
      if (live) continue;
      await rm(join(this.path, name), { recursive: true, force: true });
      removed++;
    }
    return removed;
  }
}
