import { PlatformError } from "../../sdk/values/index.js";

/**
 * One import at a time per developer on a host, taken before the upload is received and refused,
 * not queued, while another runs. Every upload is written to a temporary file of up to
 * `LIMITS.importArchiveBytes` before it is checked, so without it one developer's concurrent
 * uploads could fill the disk every tenant's data is on; a queued one would be received first.
 * The operator's imports (and `platform dev`'s) are not limited.
 */
export class ImportTurns {
  private readonly importing = new Set<string>();

  /**
   * Runs `work` (receiving and importing an archive) as `developer`'s one import on this host;
   * `409 conflict` at once while another of theirs runs. Without a developer, at once.
   */
  async run<T>(developer: string | undefined, work: () => Promise<T>): Promise<T> {
    if (developer === undefined) return work();
    if (this.importing.has(developer))
      throw new PlatformError(
        "conflict",
        "You are already importing an archive on this host, and a developer imports one at a time; retry once that import has finished.",
      );
    this.importing.add(developer);
    try {
      return await work();
    } finally {
      this.importing.delete(developer);
    }
  }
}
