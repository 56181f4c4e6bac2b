import { type Database, openDatabase } from "../db/database.js";
import { pendingMigrations } from "../db/migrate.js";
import {
  applyLoginRolesSql,
  type DatabaseRole,
  defaultLoginPrefix,
  existingRoles,
  type LoginRole,
  loginRolesSql,
  missingGroupRoles,
  newLoginRoles,
} from "../db/roles.js";

/**
 * `stablegate db roles`: the login roles of the api, worker and signer processes (issue #34,
 * SECURITY.md), each a member of the group role migration 0025 granted its rights. Run with the
 * owner's DATABASE_URL (the one `migrate` uses), after `migrate`; idempotent, so it may be run
 * again at any time. `--print` writes the SQL instead of running it (for a DBA to review and run
 * with psql). PostgreSQL only: the embedded database has one user.
 */

export class DatabaseRolesError extends Error {
  override name = "DatabaseRolesError";
}

export interface DatabaseRolesOptions {
  /** The owner's DATABASE_URL. */
  url: string | undefined;
  /** Login role names are `<prefix><role>_login`; default `<database>_`. */
  prefix?: string;
  /** Give existing login roles new passwords too. */
  rotate?: boolean;
}

export interface DatabaseRoleLogin {
  role: DatabaseRole;
  user: string;
  /** Whether this run created the login role. */
  created: boolean;
  /** The DATABASE_URL of the role's processes; with a password only when this run set one. */
  url: string;
  passwordSet: boolean;
}

function target(url: string | undefined): URL {
  if (!url)
    throw new DatabaseRolesError(
      "database roles are for PostgreSQL: set DATABASE_URL to the owner's connection (the one `stablegate migrate` uses); " +
        "the embedded database has one user",
    );
  const u = new URL(url);
  if (!databaseName(u)) throw new DatabaseRolesError("DATABASE_URL names no database");
  return u;
}

function databaseName(u: URL): string {
  return decodeURIComponent(u.pathname.replace(/^\//, ""));
}

function roleUrl(owner: URL, login: LoginRole, withPassword: boolean): string {
  const u = new URL(owner.toString());
  u.username = encodeURIComponent(login.name);
  u.password = withPassword ? encodeURIComponent(login.password) : "";
  return u.toString();
}

function logins(u: URL, options: DatabaseRolesOptions): LoginRole[] {
  try {
    return newLoginRoles(options.prefix ?? defaultLoginPrefix(databaseName(u)));
  } catch (err) {
    throw new DatabaseRolesError((err as Error).message);
  }
}

/**
 * The SQL to run as the owner (no connection made), and apart from it each role's DATABASE_URL
 * with the password the SQL sets (the SQL itself holds only SCRAM verifiers).
 */
export function printDatabaseRoles(options: DatabaseRolesOptions): { sql: string; urls: string } {
  const u = target(options.url);
  const roles = logins(u, options);
  const header = [
    "-- stablegate database roles (migration 0025 made the groups): run as the owner, after `stablegate migrate`.",
    `-- Sets the passwords of roles it creates${options.rotate ? " and of existing ones" : ""}; holds only their SCRAM verifiers.`,
    "begin;",
  ];
  return {
    sql: `${header.join("\n")}\n${loginRolesSql(databaseName(u), roles, options.rotate)}commit;\n`,
    urls: `${roles.map((l) => `${l.role}: DATABASE_URL=${roleUrl(u, l, true)}`).join("\n")}\n`,
  };
}

/** Creates (or brings in line) the login roles on the owner's connection; returns their URLs. */
export async function applyDatabaseRoles(
  options: DatabaseRolesOptions,
  database?: Database,
): Promise<DatabaseRoleLogin[]> {
  const u = target(options.url);
  const roles = logins(u, options);
  const db =
    database ??
    (await openDatabase({
      kind: "postgres",
      url: u.toString(),
      poolSize: 1,
      applicationName: "stablegate-db-roles",
    }));
  try {
    const pending = await pendingMigrations(db.db);
    const missing = await missingGroupRoles(db.db);
    if (pending.length > 0 || missing.length > 0)
      throw new DatabaseRolesError(
        `the database is not migrated (${[...pending, ...missing].join(", ")}): run \`stablegate migrate\` first`,
      );
    const before = new Set(
      await existingRoles(
        db.db,
        roles.map((r) => r.name),
      ),
    );
    await applyLoginRolesSql(db.db, loginRolesSql(databaseName(u), roles, options.rotate));
    return roles.map((l) => {
      const created = !before.has(l.name);
      const passwordSet = created || options.rotate === true;
      return { role: l.role, user: l.name, created, url: roleUrl(u, l, passwordSet), passwordSet };
    });
  } finally {
    if (!database) await db.close();
  }
}

/** The table the command prints. */
export function formatDatabaseRoles(logins: readonly DatabaseRoleLogin[]): string {
  const lines = logins.map(
    (l) =>
      `${l.role}: ${l.user} (${l.created ? "created" : "existed"}${l.passwordSet ? ", password set" : ", password unchanged"})\n` +
      `  DATABASE_URL=${l.url}`,
  );
  const shown = logins.some((l) => l.passwordSet);
  return `${lines.join("\n")}${shown ? "\nThe passwords are shown only now: give each process role its own DATABASE_URL." : ""}`;
}
