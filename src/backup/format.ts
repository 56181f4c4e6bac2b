import { summaryLine } from "../reserves/index.js";
import type { BackupResult } from "./create.js";
import type { RestoreReport } from "./restore.js";

function tableLines(tables: Record<string, number>): string[] {
  const names = Object.keys(tables).sort();
  const width = Math.max(0, ...names.map((n) => n.length));
  return names.map((n) => `    ${n.padEnd(width)}  ${tables[n]}`);
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 2 : 0)} MiB`;
}

/** What `stablegate backup` prints. */
export function formatBackupResult(r: BackupResult): string {
  const m = r.manifest;
  const rows = Object.values(m.tables).reduce((s, n) => s + n, 0);
  return [
    `Backup written to ${r.file} (${megabytes(r.size)}, mode 0600).`,
    `  database     ${m.driver === "postgres" ? "PostgreSQL" : "embedded PGlite"} ${m.database.serverVersion}, ` +
      `schema at ${m.schema.lastMigration ?? "(no migration)"}`,
    `  tables       ${Object.keys(m.tables).length} tables, ${rows} rows`,
    `  account keys ${m.accountKeys.length > 0 ? m.accountKeys.map((k) => `${k.network}/${k.environment}`).join(", ") : "none pinned yet"}`,
    `  config       ${m.configuration.keys.length > 0 ? m.configuration.keys.join(", ") : "(no variable set)"}`,
    m.secrets
      ? `  secrets      sealed with the passphrase (argon2id, AES-256-GCM): ${[...m.secrets.env, ...m.secrets.files.map((f) => `DATA_DIR/${f}`)].join(", ") || "none were set"}`
      : `  secrets      not included${m.configuration.secretKeys.length > 0 ? ` (set but left out: ${m.configuration.secretKeys.join(", ")})` : ""}; ` +
        "keep the mnemonic and the secrets apart (or back up with --include-secrets)",
  ].join("\n");
}

function accountKeysLine(r: RestoreReport): string {
  const k = r.accountKeys;
  const checked = k.checked.length > 0 ? `${k.checked.length} checked against ${k.source}` : null;
  if (k.pinned !== undefined)
    return k.pinned.length > 0
      ? `${k.pinned.length} pinned in the restored database, as in the manifest${checked ? `; ${checked}` : ""}`
      : "none pinned in the restored database";
  return checked ?? "none pinned in the backup";
}

/** What `stablegate restore` prints. */
export function formatRestoreReport(r: RestoreReport): string {
  const lines = [
    r.dryRun
      ? `Dry run: the backup of ${r.backup.createdAt} (stablegate ${r.backup.stablegateVersion}) can be restored; nothing was written.`
      : `Restored the backup of ${r.backup.createdAt} (stablegate ${r.backup.stablegateVersion}) into ${r.driver === "postgres" ? "PostgreSQL" : "the embedded database"}.`,
    `  schema       backup at ${r.migrations.backup ?? "(none)"}` +
      (r.dryRun
        ? ""
        : `, now at ${r.migrations.now ?? "(none)"}${r.migrations.applied.length > 0 ? ` (applied ${r.migrations.applied.join(", ")})` : ""}`),
    `  authentic    by ${r.authenticatedBy}`,
    `  account keys ${accountKeysLine(r)}`,
    `  config keys  ${r.configuration.keys.join(", ") || "(none)"}` +
      (r.configuration.envFile ? `\n               written to ${r.configuration.envFile}` : ""),
    `  secrets      ${r.secrets ? [...r.secrets.env, ...r.secrets.files.map((f) => `DATA_DIR/${f}`)].join(", ") || "(none)" : "not restored"}`,
    `  tables (${Object.keys(r.tables).length}, rows ${r.dryRun ? "in the backup" : "restored"})`,
    ...tableLines(r.tables),
  ];
  if (r.ledger)
    lines.push(
      r.ledger.ok
        ? `  ledger       verified: ${r.ledger.postings} postings, ${r.ledger.entries} entries, ${r.ledger.accounts} accounts`
        : `  ledger       PROBLEMS (${r.ledger.problems.length}):\n${r.ledger.problems.map((p) => `    ${p.kind}: ${p.detail}`).join("\n")}`,
    );
  for (const o of r.reserves)
    if (o.report) lines.push(`  reserves     ${o.network} ${o.environment}: ${summaryLine(o.report)}`);
  if (!r.dryRun && r.reserves.length === 0) lines.push("  reserves     no custodial chain configured");
  for (const w of r.warnings) lines.push(`  WARNING      ${w}`);
  return lines.join("\n");
}
