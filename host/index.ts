/**
 * `host`: the platform host's public entry. {@link startHost} is the one composition root (database,
 * blob store, deployments, HTTP server); the CLI reaches the host only through this file.
 */
export {
  type BackupHead,
  type BackupManifest,
  MANIFEST_FILE,
  type RestoreProgress,
  restoreBackup,
} from "./backup/index.js";
export { noUsage, type Transaction, UNLIMITED_BUDGET } from "./db/index.js";
export { Quarantine, quarantine } from "./deployments/index.js";
export { type HostOptions, type PlatformHost, startHost } from "./host.js";
export { reportReady, reportStandby } from "./isolates/crash-record.js";
export { mainThreadRaise } from "./isolates/thread-priority.js";
