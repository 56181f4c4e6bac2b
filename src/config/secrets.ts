import { randomBytes } from "node:crypto";
import path from "node:path";
import { NETWORKS } from "../domain/currency.js";
import { ensurePrivateDir, readKeyFile, UnsafeFileError, writeKeyFile } from "../lib/private-files.js";
import { networkVariables } from "./chains.js";
import { type Config, ConfigError, GENERATED_SECRET_NAMES, type GeneratedSecretName } from "./config.js";

/** `INTERNAL_SHARED_SECRET` is absent in the roles that never call the signer (docs/decisions/security.md). */
export type ResolvedSecrets = { SECRET_ENCRYPTION_KEY: string; JWT_SECRET: string } & {
  INTERNAL_SHARED_SECRET?: string;
};

/**
 * The roles that hold `INTERNAL_SHARED_SECRET` (docs/decisions/security.md): those that call the signer
 * (`worker`, `serve`) and the signer itself. `api` never does; `migrate` and the operator
 * commands neither.
 */
export function holdsInternalSecret(role: string): boolean {
  return role === "serve" || role === "worker" || role === "signer";
}

/**
 * The roles and commands that use none of the service's own secrets (SECRET_ENCRYPTION_KEY,
 * JWT_SECRET, METRICS_TOKEN): the `signer` (it holds the mnemonic and INTERNAL_SHARED_SECRET only),
 * `signer export-xpubs` on the signer's host, `migrate` and `db roles` (the owner's database work).
 * In production mode they start without them, so the signer host never holds the key that forges
 * dashboard sessions or the one that unseals webhook secrets and TOTP seeds.
 */
const WITHOUT_SERVICE_SECRETS = new Set(["signer", "signer export-xpubs", "migrate", "db roles"]);

export function usesServiceSecrets(role: string): boolean {
  return !WITHOUT_SERVICE_SECRETS.has(role);
}

/** In production mode, the service secrets a role that uses them must be given (none generated). */
function missingServiceSecrets(config: Config, role: string): { variable: string; message: string }[] {
  if (!config.production || !usesServiceSecrets(role)) return [];
  const problems: { variable: string; message: string }[] = [];
  for (const name of ["SECRET_ENCRYPTION_KEY", "JWT_SECRET"] as const) {
    if (!config.secrets[name])
      problems.push({ variable: name, message: "required in production mode (no generated secrets)" });
  }
  if (!config.metricsToken) {
    problems.push({
      variable: "METRICS_TOKEN",
      message:
        "required in production mode: /metrics and the detail of /readyz answer only to Authorization: Bearer <METRICS_TOKEN>",
    });
  }
  return problems;
}

/**
 * The configuration a role runs with. In production mode a role that uses the service secrets
 * (every role but the signer and migrate) must be given them. A holder of `INTERNAL_SHARED_SECRET` needs it configured in
 * production mode. The `api` role, internet-facing and never calling the signer, refuses to start
 * with it in production mode (whoever takes over an api process must not be able to ask the signer
 * for anything) and drops it otherwise (`ignored`: the caller logs it); other non-holders drop it.
 */
export function configForRole(given: Config, role: string): { config: Config; ignored: boolean } {
  // A role that never orders energy must not hold the rental provider's secret: refused in
  // production mode (the api is internet-facing, the signer holds the keys), dropped otherwise.
  const rentalSecrets = rentalSecretVariables(given);
  if (given.production && rentalSecrets.length > 0 && !ordersRentals(role))
    throw new ConfigError(
      rentalSecrets.map((variable) => ({
        variable,
        message: `only serve and worker order rented energy: remove it from the ${role} role's environment`,
      })),
    );
  const config = ordersRentals(role) ? given : withoutRentalCredentials(given);
  const configured = config.secrets.INTERNAL_SHARED_SECRET !== undefined;
  const missing = missingServiceSecrets(config, role);
  if (holdsInternalSecret(role)) {
    if (config.production && !configured)
      missing.push({
        variable: "INTERNAL_SHARED_SECRET",
        message: `required in production mode for the ${role} role (no generated secrets)`,
      });
    if (missing.length > 0) throw new ConfigError(missing);
    return { config, ignored: false };
  }
  if (missing.length > 0) throw new ConfigError(missing);
  if (!configured) return { config, ignored: false };
  if (role === "api" && config.production)
    throw new ConfigError([
      {
        variable: "INTERNAL_SHARED_SECRET",
        message:
          "the api role never calls the signer and must not hold the secret that authenticates calls to it " +
          "(docs/decisions/security.md): remove it from this process's environment (only serve, worker and signer use it)",
      },
    ]);
  return {
    config: { ...config, secrets: { ...config.secrets, INTERNAL_SHARED_SECRET: undefined } },
    ignored: role === "api",
  };
}

/** The roles whose energy engine orders rented energy (decision 21): only they hold the provider's key. */
function ordersRentals(role: string): boolean {
  return role === "serve" || role === "worker";
}

/** The `<NETWORK>_RENTAL_API_SECRET` variables (with their `SANDBOX_` prefix) that are set. */
function rentalSecretVariables(config: Config): string[] {
  const out: string[] = [];
  for (const definition of NETWORKS) {
    const n = config.chains.networks[definition.network];
    for (const environment of ["production", "sandbox"] as const)
      if (n?.[environment].rental) out.push(networkVariables(definition, environment).rental("API_SECRET"));
  }
  return out;
}

/** The configuration without any energy rental provider (its API key and secret dropped). */
function withoutRentalCredentials(config: Config): Config {
  const networks = Object.fromEntries(
    Object.entries(config.chains.networks).map(([name, n]) => [
      name,
      {
        ...n,
        production: { ...n.production, rental: undefined },
        sandbox: { ...n.sandbox, rental: undefined },
      },
    ]),
  );
  return { ...config, chains: { ...config.chains, networks } };
}

/**
 * Returns the secrets of `role` (default: all), generating the missing ones into
 * `DATA_DIR/secrets.json` (mode 0600) outside production mode so that restarts keep them (data
 * encrypted with a lost key is lost). In production mode `parseConfig` and `configForRole` have
 * already refused to start without them. A role that does not hold `INTERNAL_SHARED_SECRET`
 * neither generates nor returns it. The file is read and written without following a link and
 * must be owned by the user running stablegate (issue #34, finding 8: a planted `JWT_SECRET`
 * forges dashboard sessions): otherwise a `ConfigError` on `DATA_DIR`.
 */
export async function resolveSecrets(config: Config, role?: string): Promise<ResolvedSecrets> {
  const names = GENERATED_SECRET_NAMES.filter(
    (n) => n !== "INTERNAL_SHARED_SECRET" || role === undefined || holdsInternalSecret(role),
  );
  return (await resolveNamed(config, names)) as ResolvedSecrets;
}

/**
 * `INTERNAL_SHARED_SECRET` alone, for the signer role: it needs no other secret (and in production
 * mode is not given the others: `usesServiceSecrets`).
 */
export async function resolveInternalSecret(config: Config): Promise<string> {
  return (await resolveNamed(config, ["INTERNAL_SHARED_SECRET"])).INTERNAL_SHARED_SECRET as string;
}

async function resolveNamed(
  config: Config,
  names: readonly GeneratedSecretName[],
): Promise<Partial<Record<GeneratedSecretName, string>>> {
  const missing = names.filter((n) => !config.secrets[n]);
  if (missing.length === 0) return pick(config.secrets as Record<string, string>, names);
  if (config.production) throw new Error(`refusing to generate ${missing.join(", ")} in production mode`);

  const file = path.join(config.dataDir, "secrets.json");
  let stored: Partial<ResolvedSecrets> = {};
  try {
    const text = await readKeyFile(file);
    if (text !== undefined) stored = JSON.parse(text) as Partial<ResolvedSecrets>;
  } catch (err) {
    throw unsafe(err);
  }
  let changed = false;
  for (const name of missing) {
    if (!stored[name]) {
      stored[name] = randomBytes(32).toString("hex");
      changed = true;
    }
  }
  if (changed) {
    await ensurePrivateDir(config.dataDir);
    await writeKeyFile(file, JSON.stringify(stored, null, 2)).catch((err: unknown) => {
      throw unsafe(err);
    });
  }
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = config.secrets[name] ?? stored[name];
    if (value) out[name] = value;
  }
  return out as ResolvedSecrets;
}

/** An `UnsafeFileError` of `secrets.json` as the ConfigError of its folder. */
function unsafe(err: unknown): unknown {
  if (!(err instanceof UnsafeFileError)) return err;
  return new ConfigError([
    {
      variable: "DATA_DIR",
      message: `${err.message}: refusing to use it as secrets.json (it must be a regular file owned by the user running stablegate)`,
    },
  ]);
}

function pick(secrets: Record<string, string>, names: readonly string[]): ResolvedSecrets {
  return Object.fromEntries(names.map((n) => [n, secrets[n]])) as ResolvedSecrets;
}
