import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { join } from "node:path";

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

/**
 * Where received import archives wait while they are imported: a folder of the host's data (not
 * the system's temporary folder, which may be memory), one subfolder per upload named after the
 * receiving process. An upload's subfolder is removed when its import ends; a host starting
 * removes those a crashed process left, and never one a running host (sharing the folder) writes.
 */
export class UploadFolder {
  constructor(readonly path: string) {}

  /** A new private subfolder for one upload (remove it when done). */
  async create(): Promise<string> {
    await mkdir(this.path, { recursive: true, mode: 0o700 });
    return mkdtemp(join(this.path, `${process.pid}-`));
  }

  /** Removes every upload a process no longer running left behind; returns how many. */
  async removeLeftovers(): Promise<number> {
    const names = await readdir(this.path).catch(() => []);
    let removed = 0;
    for (const name of names) {
      const pid = Number(name.split("-")[0]);
      if (Number.isSafeInteger(pid) && pid > 0 && (pid === process.pid || running(pid))) continue;
      await rm(join(this.path, name), { recursive: true, force: true });
      removed++;
    }
    return removed;
  }
}
