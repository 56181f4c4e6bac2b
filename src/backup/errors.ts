/** A backup or restore the command refuses before writing anything (exit 2, one line). */
export class BackupRefusal extends Error {}

/**
 * A backup or restore that failed once under way (exit 1, one line): a tool's or the database's
 * error, or a restored database that is not what the manifest describes.
 */
export class BackupFailure extends Error {}
