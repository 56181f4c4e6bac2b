import type { Config } from "../config/config.js";
import { keyMaterialForRole } from "../config/key-custody.js";
import { configForRole, resolveInternalSecret } from "../config/secrets.js";
import { type Database, openDatabase } from "../db/database.js";
import { pendingMigrations } from "../db/migrate.js";
import { type Clock, systemClock } from "../lib/clock.js";
import { createProcessLogger, type Logger } from "../observability/logger.js";
import { Registry } from "../observability/metrics.js";
import { accountXpubsOf, pinAccountKeys, resolveAccountKeys } from "../wallet/index.js";
import { createLocalSigner, outflowCapped } from "./local-signer.js";
import { type RunningSignerServer, startSignerServer } from "./server.js";

export class SignerStartupError extends Error {
  override name = "SignerStartupError";
}

export interface SignerRoleOptions {
  /** Tests: an already-open database (the signer role otherwise opens `DATABASE_URL`). */
  database?: Database;
  logger?: Logger;
  /** Tests: the signer's clock (the outflow cap's windows). */
  clock?: Clock;
}

/**
 * `stablegate signer`: the one process that holds the mnemonic. It listens on
 * `SIGNER_HOST:SIGNER_PORT` (keep it on a private network); workers reach it with `SIGNER_URL`
 * and `INTERNAL_SHARED_SECRET`. Its transfer policy (`policy.ts`) reads the intents and the
 * evidence behind them itself (`evidence.ts`), so it needs `DATABASE_URL` (a connection of its
 * own: a database user that can only read is enough). Its outflow cap (`outflow.ts`) is counted in
 * `DATA_DIR/signer-outflow.json`; production mode refuses to start without
 * `SIGNER_MAX_OUTFLOW_PER_HOUR` and `SIGNER_MAX_OUTFLOW_PER_DAY`. `serve` runs the same signer
 * in-process instead.
 */
export async function startSignerRole(
  config: Config,
  options: SignerRoleOptions = {},
): Promise<RunningSignerServer> {
  const logger = options.logger ?? createProcessLogger(config);
  const { config: roleConfig } = configForRole(config, "signer");
  keyMaterialForRole(roleConfig, "signer");
  // The outflow cap bounds what a compromise of api, worker and database together takes (see
  // docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11): in the production split layout the signer host must set it.
  if (roleConfig.production && !outflowCapped(roleConfig.sending.outflowCap)) {
    throw new SignerStartupError(
      "in production mode the signer needs SIGNER_MAX_OUTFLOW_PER_HOUR and SIGNER_MAX_OUTFLOW_PER_DAY " +
        "(token units per currency type, e.g. 5000 or USDT-ERC20:5000,USDT-TRC20:5000): the most a " +
        "compromise of the api, worker and database hosts can take before someone reacts",
    );
  }
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
    const registry = new Registry();
    const signer = await createLocalSigner(roleConfig, database.db, logger, {
      registry,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    const server = await startSignerServer({
      signer,
      secret: internalSecret,
      host: roleConfig.sending.signerHost,
      port: roleConfig.sending.signerPort,
      clock: systemClock,
      logger,
      registry,
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
