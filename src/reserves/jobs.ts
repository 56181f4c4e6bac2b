import type { AvailableChain } from "../chains/index.js";
import { type ChainsConfig, coldWalletOf } from "../config/chains.js";
import type { Db } from "../db/database.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Job } from "../worker/runner.js";
import { custodialChains } from "./custody.js";
import { reconcileReserves } from "./reconcile.js";
import { recordReserveCheck } from "./status.js";

export interface ReserveJobDeps {
  database: { db: Db };
  chains: { available(): AvailableChain[] };
  config: {
    reserves: { checkEveryMs: number; tolerance: bigint };
    chains: ChainsConfig;
  };
  logger: Logger;
  clock: Clock;
}

/**
 * One reconciliation job per available real chain (issue #22); a shortfall is logged at error
 * level. The sandbox simulator holds no custody (its deposits stay where they were paid and its
 * hot wallet is simulated): nothing to reconcile there.
 */
export function reserveJobs(deps: ReserveJobDeps): Job[] {
  const { checkEveryMs, tolerance } = deps.config.reserves;
  if (checkEveryMs <= 0) return [];
  return custodialChains(deps.chains).map((chain) => ({
    name: `reserves:${chain.network}:${chain.environment}`,
    everyMs: checkEveryMs,
    run: async () => {
      const coldWallet = coldWalletOf(deps.config.chains, chain.network, chain.environment)?.address;
      const report = await reconcileReserves(
        { db: deps.database.db, clock: deps.clock },
        { ...chain, adapter: chain.adapter, coldWallet },
        tolerance,
      );
      await recordReserveCheck(deps.database.db, report);
      if (!report.ok)
        deps.logger.error(
          { network: chain.network, environment: chain.environment, shortfall: String(report.shortfall) },
          "reserve shortfall: the chain holds less than the ledger owes",
        );
    },
  }));
}
