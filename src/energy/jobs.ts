import {
  type AvailableChain,
  type ChainWriter,
  createChainWriter,
  type WriterConfig,
} from "../chains/index.js";
import { networkSettingsOf } from "../config/chains.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { TransferOutcomes } from "../sender/index.js";
import type { Signer } from "../signer/index.js";
import { HOT_WALLET_INDEX } from "../wallet/index.js";
import type { Job } from "../worker/runner.js";
import { EnergyEngine } from "./engine.js";
import { ItrxRental } from "./itrx-rental.js";
import { energyPolicyOf } from "./policy.js";

/** What the energy engine's jobs use (a process's runtime has all of it). */
export interface EnergyJobDeps {
  database: { db: Db };
  chains: { available(): AvailableChain[] };
  addressDeriver: { address(network: CurrencyType, environment: Environment, index: number): string };
  config: WriterConfig;
  signer: Signer | null;
  logger: Logger;
  clock: Clock;
}

/** The engine of a chain whose writer has Stake 2.0 (TRON); undefined elsewhere (EVM, simulator). */
export function energyEngineOf(
  deps: Omit<EnergyJobDeps, "chains" | "signer">,
  chain: AvailableChain,
  writer: ChainWriter,
): EnergyEngine | undefined {
  if (writer.kind !== "signed" || !writer.resources) return undefined;
  const { network, environment } = chain;
  const settings = networkSettingsOf(deps.config.chains, network);
  const rental = settings[environment].rental;
  return new EnergyEngine({
    db: deps.database.db,
    network,
    environment,
    writer: writer as typeof writer & { resources: NonNullable<typeof writer.resources> },
    address: (index) => deps.addressDeriver.address(network, environment, index),
    policy: energyPolicyOf(settings.options),
    ...(rental ? { rental: new ItrxRental(rental) } : {}),
    logger: deps.logger,
    clock: deps.clock,
  });
}

/**
 * The engine's round of every TRON chain a signer serves here: reclaims of delegations whose
 * transfer is final, and stakes of the resource account's TRX above its reserve.
 */
export function energyJobs(deps: EnergyJobDeps, _instanceId: string): Job[] {
  const jobs: Job[] = [];
  if (!deps.signer) return jobs;
  for (const chain of deps.chains.available()) {
    const { network, environment } = chain;
    const writer = createChainWriter(
      chain,
      deps.config,
      deps.addressDeriver.address(network, environment, HOT_WALLET_INDEX),
    );
    const engine = energyEngineOf(deps, chain, writer);
    if (!engine) continue;
    deps.logger.info(
      {
        network,
        environment,
        resourceAccount: engine.resourceAccount,
        rental: networkSettingsOf(deps.config.chains, network)[environment].rental?.url ?? null,
      },
      "energy engine: send TRX to the resource account to stake it (without it, TRON fees are burned or rented)",
    );
    jobs.push({
      name: `energy:${network}:${environment}`,
      // Reclaims are due at most a round after their transfer is final; stakes wait for TRX to
      // arrive. Every 10 s keeps its chain reads (the resource account's balance and stake, from
      // every provider) light next to the watcher's.
      everyMs: 10_000,
      run: async () => {
        await engine.tick();
      },
    });
  }
  return jobs;
}

/**
 * The outcomes of the engine's own intents: a stake or delegation needs nothing (a sweep waiting for
 * a failed delegation fails with it and is looked at again); a reclaim that failed leaves energy
 * delegated: an alert, the operator looks (docs/decisions/tron-resources.md).
 */
export function registerEnergyOutcomes(outcomes: TransferOutcomes, logger: Logger): void {
  outcomes.register("resource_stake", async () => {});
  outcomes.register("resource_delegation", async () => {});
  outcomes.register("resource_reclaim", async (_trx, outcome) => {
    if (outcome.status === "failed")
      logger.error(
        { alert: "energy_reclaim_failed", intentId: outcome.intentId, reason: outcome.reason },
        "ALERT: a delegation of the resource account could not be taken back",
      );
  });
}
