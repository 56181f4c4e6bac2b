import path from "node:path";
import { buildChainRegistry, type ChainRegistry } from "../chains/index.js";
import { coldWalletOf } from "../config/chains.js";
import type { Config } from "../config/config.js";
import { type Db, openDatabase } from "../db/database.js";
import { acquireEmbeddedLock, readEmbeddedLock } from "../db/embedded-lock.js";
import { migrate } from "../db/migrate.js";
import { systemClock } from "../lib/clock.js";
import type { CreatedMerchant } from "../merchants/index.js";
import { type OperatorContext, runOperatorCommand } from "../operator/commands.js";
import { sendControlCommand } from "../operator/control-client.js";
import { resolveAccountKeys } from "../wallet/index.js";

/**
 * Runs an operator command wherever the data lives: on PostgreSQL directly; on the embedded
 * database either through the running service's control socket or, when none runs, by opening it.
 */
export async function runOperator(
  config: Config,
  name: string,
  args: Record<string, unknown>,
): Promise<unknown> {
  if (config.database.url) {
    const database = await openDatabase({
      kind: "postgres",
      url: config.database.url,
      poolSize: 1,
      applicationName: "stablegate-cli",
    });
    try {
      return await runOperatorCommand(operatorContext(config, database.db), name, args);
    } finally {
      await database.close();
    }
  }
  const holder = await readEmbeddedLock(config.dataDir);
  if (holder?.controlSocket) return sendControlCommand(holder.controlSocket, name, args);
  const lock = await acquireEmbeddedLock(config.dataDir, { role: "cli", controlSocket: null });
  const database = await openDatabase({ kind: "pglite", dataDir: path.join(config.dataDir, "pglite") });
  try {
    await migrate(database.db);
    return await runOperatorCommand(operatorContext(config, database.db), name, args);
  } finally {
    await database.close();
    await lock.release();
  }
}

/** The chains are built on first use, from the same configuration the service runs with. */
export function operatorContext(config: Config, db: Db): OperatorContext {
  let chains: ChainRegistry | undefined;
  return {
    db,
    clock: systemClock,
    coldWallet: (n, e) => coldWalletOf(config.chains, n, e)?.address,
    chains: () => {
      chains ??= buildChainRegistry(config, { db, clock: systemClock });
      return chains;
    },
    // Watch-only from MASTER_XPUBS when given, else from the mnemonic (the command never signs).
    addresses: async () => (await resolveAccountKeys(config, "xpubs")).deriver,
  };
}

/** What `merchant.create` answers: the merchant, its pairs, its owner's login. */
export type CreatedMerchantWithOwner = CreatedMerchant & { ownerId: string; passwordToken: string | null };

export function printCreatedMerchant(m: CreatedMerchantWithOwner, config: Config): string {
  // The dashboard's address, as the reset mails give it (the first allowed origin, else production).
  const dashboard = config.corsOrigins[0] ?? config.http.productionBaseUrl;
  const lines = [
    `Merchant ${m.id} created for ${m.email} (${m.companyName}).`,
    "",
    m.passwordToken
      ? `Dashboard: the owner ${m.email} sets a password within 72 hours here (single use), then signs in:\n` +
        `  ${dashboard}/reset-password#token=${encodeURIComponent(m.passwordToken)}`
      : `Dashboard: the owner ${m.email} signs in at ${dashboard}/login with the password given.`,
    "",
    "API key pairs — the secrets are shown only now; store them in your server's secret store:",
  ];
  for (const k of m.keys) {
    const base = k.environment === "sandbox" ? config.http.sandboxBaseUrl : config.http.productionBaseUrl;
    lines.push(
      "",
      `  ${k.environment} (${base})`,
      `    apikey:       ${k.apiKey}`,
      `    x-api-secret: ${k.apiSecret}`,
    );
  }
  return lines.join("\n");
}
