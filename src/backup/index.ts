/**
 * Backups (issue #42): `stablegate backup` writes the database, the non-secret configuration and,
 * sealed with a passphrase on request, the secrets into one archive; `stablegate restore` checks
 * it (integrity, schema level, account keys, an empty target) before restoring, then verifies the
 * books. See docs/decisions/backups.md.
 */
export { ArchiveError, ENTRY_NAMES, extractArchive } from "./archive.js";
export {
  networkVariableClasses,
  PLAIN_VARIABLES,
  SECRET_VARIABLES,
  splitConfiguration,
} from "./configuration.js";
export { type BackupOptions, type BackupResult, createBackup } from "./create.js";
export { BackupFailure, BackupRefusal } from "./errors.js";
export { formatBackupResult, formatRestoreReport } from "./format.js";
export { type BackupManifest, parseManifest } from "./manifest.js";
export {
  type ReserveContext,
  type ReserveOutcome,
  type RestoreOptions,
  type RestoreReport,
  restoreBackup,
} from "./restore.js";
export { PASSPHRASE_MIN } from "./sealed-secrets.js";
