/**
 * File storage: the size of one file, what a developer may store, the script check of SVG and XML files,
 * listings and public downloads.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const STORAGE_LIMITS = {
  /** One uploaded file. */
  fileSize: 5 * 1024 * 1024,
  /** Stored bytes per developer over all deployments. */
  storagePerDeveloper: 100 * 1024 * 1024,
  /**
   * The least one stored file counts against {@link LIMITS.storagePerDeveloper}, whatever its size:
   * each file costs the host a record and a file on disk (an inode, a block). Ours: without it, one
   * client stored 3,000 empty files in 3 s, counted as nothing.
   */
  storageBytesPerFile: 4096,
  /**
   * How long the script check of one SVG or XML file may take on its own thread (linear, about
   * 40 ms a MB), and the bytes of files that may wait for it, all deployments together and one
   * deployment's: beyond any, `503 unavailable` (a download of an SVG stored before the check's
   * version was kept is served as an attachment instead). Ours.
   */
  markupCheckMs: 30_000,
  markupCheckQueueBytes: 64 * 1024 * 1024,
  markupCheckQueueBytesEach: 16 * 1024 * 1024,
  /** Newest files shown by the inspect route and `platform storage list`. */
  listingSize: 500,
  /**
   * An S3 bucket's server: how long a connection may take to open, a request to get its answer's
   * head, and a connection to stay silent mid-request; beyond, the request fails (an upload or a
   * download `503`). Without them one hung server held the client's 50 sockets, every tenant's
   * files behind them, and the host's start. Ours.
   */
  s3ConnectMs: 5000,
  /** Covers an upload's body too: 5 MiB in 60 s is about 0.7 Mbit/s to the bucket. */
  s3AnswerMs: 60_000,
  s3SilenceMs: 30_000,
  /** `Cache-Control: max-age` of public downloads on unrestricted apps. */
  publicCacheSeconds: 3600,
} as const;
