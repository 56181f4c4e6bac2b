import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { Db } from "./database.js";

/**
 * The database roles of the process roles (issue #34, README.md#production-database-roles). Migration 0025 creates the
 * group roles (NOLOGIN) and grants them what each process role may do; the login roles the
 * processes connect as are the operator's, made here (`stablegate db roles`): one per process role,
 * a member of exactly its group, with CONNECT on this database (which PUBLIC loses: the group
 * roles are cluster-wide, so a login of another database's deployment must not get in).
 * `migrate`, `serve` and the operator commands keep the owner's DATABASE_URL.
 */

export const DATABASE_ROLES = ["api", "worker", "signer"] as const;
export type DatabaseRole = (typeof DATABASE_ROLES)[number];

/** The group role (migration 0025) of each process role. */
export const GROUP_ROLES: Record<DatabaseRole, string> = {
  api: "stablegate_api",
  worker: "stablegate_worker",
  signer: "stablegate_signer",
};

/** A login role name: lower-case letters, digits and `_`, at most 63 bytes (PostgreSQL's limit). */
const NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** `<prefix><role>_login`, e.g. `stablegate_api_login` for the prefix `stablegate_`. */
export function loginRoleName(prefix: string, role: DatabaseRole): string {
  const name = `${prefix}${role}_login`;
  if (!NAME.test(name))
    throw new RangeError(
      `the login role name ${JSON.stringify(name)} is not a plain PostgreSQL name (a-z, 0-9, _; at most 63)`,
    );
  return name;
}

/** The default prefix: the database's name made a plain name, then `_`. */
export function defaultLoginPrefix(database: string): string {
  return `${
    database
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, "_")
      .replace(/^([^a-z_])/, "_$1")
      .slice(0, 40) || "stablegate"
  }_`;
}

export interface LoginRole {
  role: DatabaseRole;
  name: string;
  /** Set on creation (and on an existing role only with `rotate`). */
  password: string;
}

export function newLoginRoles(prefix: string): LoginRole[] {
  return DATABASE_ROLES.map((role) => ({
    role,
    name: loginRoleName(prefix, role),
    password: randomBytes(24).toString("base64url"),
  }));
}

const ident = (s: string) => `"${s.replaceAll('"', '""')}"`;
const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * The SCRAM-SHA-256 verifier of `password` (RFC 5802/7677, PostgreSQL's stored form): the server
 * stores it as given, so neither the printed SQL nor the server's statement log holds the password.
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password.normalize("NFKC"), salt, iterations, 32, "sha256");
  const clientKey = createHmac("sha256", salted).update("Client Key").digest();
  const storedKey = createHash("sha256").update(clientKey).digest();
  const serverKey = createHmac("sha256", salted).update("Server Key").digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString("base64")}$${storedKey.toString("base64")}:${serverKey.toString("base64")}`;
}

/**
 * The SQL that creates (or brings back in line) the login roles of `database`: idempotent, so it
 * may be run again at any time (after new migrations too: the grants are the groups', made by the
 * migrations). An existing login keeps its password unless `rotate`. Needs CREATEROLE (or a
 * superuser) and the owner's right to grant CONNECT on the database.
 */
export function loginRolesSql(database: string, logins: readonly LoginRole[], rotate = false): string {
  const out: string[] = [];
  for (const l of logins) {
    const group = GROUP_ROLES[l.role];
    const others = DATABASE_ROLES.filter((r) => r !== l.role).map((r) => GROUP_ROLES[r]);
    const password = literal(scramVerifier(l.password));
    out.push(
      `do $roles$ begin`,
      `  if not exists (select from pg_roles where rolname = ${literal(l.name)}) then`,
      `    create role ${ident(l.name)} login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls password ${password};`,
      rotate
        ? `  else\n    alter role ${ident(l.name)} login password ${password};`
        : `  else\n    alter role ${ident(l.name)} login;`,
      `  end if;`,
      // A login in two groups would hold both roles' rights.
      ...others.map(
        (o) =>
          `  if pg_has_role(${literal(l.name)}, ${literal(o)}, 'member') then revoke ${ident(o)} from ${ident(l.name)}; end if;`,
      ),
      `end $roles$;`,
      `grant ${ident(group)} to ${ident(l.name)};`,
      `grant connect on database ${ident(database)} to ${ident(l.name)};`,
    );
  }
  out.push(`revoke connect on database ${ident(database)} from public;`);
  return `${out.join("\n")}\n`;
}

/** The group roles migration 0025 made that this cluster lacks (then: run `stablegate migrate`). */
export async function missingGroupRoles(db: Db): Promise<string[]> {
  const groups = Object.values(GROUP_ROLES);
  const { rows } = await sql<{
    rolname: string;
  }>`select rolname from pg_roles where rolname = any (${groups}::text[])`.execute(db);
  return groups.filter((g) => !rows.some((r) => r.rolname === g));
}

/** Which of `names` exist already. */
export async function existingRoles(db: Db, names: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{
    rolname: string;
  }>`select rolname from pg_roles where rolname = any (${[...names]}::text[])`.execute(db);
  return rows.map((r) => r.rolname);
}

/** Runs `loginRolesSql` in one transaction. */
export async function applyLoginRolesSql(db: Db, text: string): Promise<void> {
  await db.transaction().execute((trx) => sql.raw(text).execute(trx));
}
