/**
 * `host/backup`: a backup of the whole host while it serves (docs/operators.md "Backups"). The
 * host streams one snapshot of its store plus the bytes of every object record in it
 * (backup-stream.ts, in the format of backup-format.ts); `restoreBackup` writes such a stream
 * into a data folder that `platform host --data` starts from.
 */
export {
  BACKUP_FORMAT,
  BACKUP_VERSION,
  type BackupHead,
  type BackupManifest,
  type BackupTotals,
  MANIFEST_FILE,
} from "./backup-format.js";
export { type BackupSource, type RunningBackup, startBackup } from "./backup-stream.js";
export { type RestoreProgress, restoreBackup } from "./restore.js";
