import type { Config } from "../config/config.js";
import { keyMaterialForRole } from "../config/key-custody.js";
import { configForRole, resolveInternalSecret } from "../config/secrets.js";
import { type Database, openDatabase } from "../db/database.js";
import { pendingMigrations } from "../db/migrate.js";
import { systemClock } from "../lib/clock.js";
import { createLogger, type Logger } from "../observability/logger.js";
import { accountXpubsOf, pinAccountKeys, resolveAccountKeys } from "../wallet/index.js";
import { createLocalSigner } from "./local-signer.js";
import { type RunningSignerServer, startSignerServer } from "./server.js";

export class SignerStartupError extends Error {
  override name = "SignerStartupError";
}

export interface SignerRoleOptions {
  /** Tests: an already-open database (the signer role otherwise opens `DATABASE_URL`). */
  database?: Database;
  logger?: Logger;
}

/**
 * `stablegate signer`: the one process that holds the mnemonic. It listens on
 * `SIGNER_HOST:SIGNER_PORT` (keep it on a private network); workers reach it with `SIGNER_URL`
 * and `INTERNAL_SHARED_SECRET`. Its transfer policy (`policy.ts`) reads the intents and deposit
 * addresses itself, so it needs `DATABASE_URL` (a connection of its own; a database user that
 * can only read `outgoing_transfers` and `watched_addresses` is enough). `serve` runs the same
 * signer in-process instead.
 */
export async function startSignerRole(
  config: Config,
  options: SignerRoleOptions = {},
): Promise<RunningSignerServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const { config: roleConfig } = configForRole(config, "signer");
  keyMaterialForRole(roleConfig, "signer");
  if (!options.database && !roleConfig.database.url) {
    throw new SignerStartupError(
      "the signer role needs DATABASE_URL: its policy checks every transfer against the recorded " +
        "withdrawals, payouts, sweeps and deposit addresses (the embedded database serves one process: " +
        "run `serve`, which signs in-process)",
    );
  }
  const internalSecret = await resolveInternalSecret(roleConfig);
  const database =
    options.database ??
    (await openDatabase({
      kind: "postgres",
      url: roleConfig.database.url as string,
      poolSize: Math.min(roleConfig.database.poolSize, 5),
      applicationName: "stablegate-signer",
    }));
  try {
    const pending = await pendingMigrations(database.db);
    if (pending.length > 0)
      throw new SignerStartupError(
        `the database schema is behind this build (${pending.join(", ")}); run \`stablegate migrate\``,
      );
    // The signer checks its mnemonic against the account keys the database's addresses come from:
    // a signer with another seed would sign for none of them (or the api/worker hosts' MASTER_XPUBS
    // are not this signer's).
    const { deriver } = await resolveAccountKeys(roleConfig, "mnemonic");
    const differ = await pinAccountKeys(database.db, accountXpubsOf(deriver));
    if (differ.length > 0)
      throw new SignerStartupError(
        `the mnemonic's account keys differ from the ones this database's addresses were derived from (${differ.join(", ")}): ` +
          "this signer could not spend them; start it with the mnemonic the deployment was set up with",
      );
    const signer = await createLocalSigner(roleConfig, database.db, logger);
    const server = await startSignerServer({
      signer,
      secret: internalSecret,
      host: roleConfig.sending.signerHost,
      port: roleConfig.sending.signerPort,
      clock: systemClock,
      logger,
    });
    logger.info({ url: server.url }, "stablegate signer listening");
    return {
      ...server,
      async close() {
        await server.close();
        if (!options.database) await database.close();
      },
    };
  } catch (err) {
    if (!options.database) await database.close();
    throw err;
  }
}
