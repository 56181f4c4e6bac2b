import {
  type AvailableChain,
  createChainWriter,
  normalizeAddress,
  validateAddress,
  type WriterConfig,
} from "../chains/index.js";
import { coldWalletOf, networkSettingsOf, networkVariables, type SweepMaxCost } from "../config/chains.js";
import { ConfigError } from "../config/config.js";
import type { Db } from "../db/database.js";
import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { type EnergyEngine, energyEngineOf } from "../energy/index.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Signer } from "../signer/index.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../wallet/index.js";
import type { Job } from "../worker/runner.js";
import { ColdForwarder } from "./cold.js";
import { followFreezeEvents } from "./freeze-watch.js";
import { HeldDecisions } from "./held-decisions.js";
import { Sweeper } from "./sweeper.js";

/** What the sweep jobs use (a process's runtime has all of it). */
export interface SweepJobDeps {
  database: { db: Db };
  chains: { available(): AvailableChain[] };
  addressDeriver: { address(network: CurrencyType, environment: Environment, index: number): string };
  config: WriterConfig;
  /** Only whether there is one: a chain that needs a signer is swept only where its sender runs. */
  signer: Signer | null;
  logger: Logger;
  clock: Clock;
}

/**
 * The sweeper's job of every available real chain. The simulator has no gas and its deposit
 * addresses cost nothing to keep: no sweeping there (sandbox payments stay where the customer sent
 * them, which is what sandbox users inspect). Like the sender, a chain that needs a signer is not
 * swept by a process that has none (a `worker` without SIGNER_URL).
 */
export function sweepJobs(deps: SweepJobDeps, _instanceId: string): Job[] {
  const jobs: Job[] = [];
  const db = deps.database.db;
  for (const chain of deps.chains.available()) {
    const { network, environment } = chain;
    const address = (index: number) => deps.addressDeriver.address(network, environment, index);
    const writer = createChainWriter(chain, deps.config, address(HOT_WALLET_INDEX));
    const cold = coldWalletOf(deps.config.chains, network, environment);
    if (cold && !validateAddress(network, cold.address)) {
      const variable = networkVariables(currencyOf(network).definition, environment).coldWallet;
      throw new ConfigError([{ variable, message: `not a valid ${network} address` }]);
    }
    // The issuer's freeze events for the own addresses (README.md#frozen-funds): reads only, so
    // also where no signer is configured. The simulator's frozen addresses are fixed.
    if (chain.kind !== "simulator") {
      const target = {
        network,
        environment,
        adapter: chain.adapter,
        confirmations: chain.confirmations,
        wallets: {
          hotWallet: normalizeAddress(network, address(HOT_WALLET_INDEX)),
          gasTank: normalizeAddress(network, address(GAS_TANK_INDEX)),
          coldWallet: cold ? normalizeAddress(network, cold.address) : undefined,
        },
      };
      jobs.push({
        name: `freeze-watch:${network}:${environment}`,
        everyMs: 5_000,
        run: async () => {
          await followFreezeEvents({ db, clock: deps.clock, logger: deps.logger }, target);
        },
      });
    }
    if (writer.kind === "signed" && !deps.signer) continue;
    // The decisions on held deposits (README.md#frozen-funds), the simulator's included.
    const held = new HeldDecisions({
      db,
      network,
      environment,
      writer,
      logger: deps.logger,
      clock: deps.clock,
    });
    jobs.push({
      name: `held-decisions:${network}:${environment}`,
      everyMs: 1_000,
      run: async () => {
        await held.tick();
      },
    });
    if (chain.kind === "simulator") continue;
    const sweeper = new Sweeper({
      db,
      network,
      environment,
      writer,
      address,
      threshold: networkSettingsOf(deps.config.chains, network).sweepThreshold,
      ...maxCostOption(networkSettingsOf(deps.config.chains, network).sweepMaxCost),
      isFrozen: (a) => chain.adapter.isFrozen(a),
      ...energyOption(energyEngineOf(deps, chain, writer)),
      // EVM batched sweeps through the EIP-7702 sweeper (issue #39), where the network runs it.
      ...(networkSettingsOf(deps.config.chains, network).sweepBatch &&
      writer.kind === "signed" &&
      writer.sweeperDeployed
        ? { batch: {} }
        : {}),
      logger: deps.logger,
      clock: deps.clock,
    });
    if (cold) {
      const forwarder = new ColdForwarder({
        db,
        network,
        environment,
        writer,
        hotWallet: address(HOT_WALLET_INDEX),
        cold,
        logger: deps.logger,
        clock: deps.clock,
      });
      jobs.push({
        name: `cold-forward:${network}:${environment}`,
        everyMs: 30_000,
        run: async () => {
          await forwarder.tick();
        },
      });
    }
    jobs.push({
      name: `sweep:${network}:${environment}`,
      everyMs: 10_000,
      run: async () => {
        await sweeper.tick();
      },
    });
  }
  return jobs;
}

function energyOption(engine: EnergyEngine | undefined): { energy?: EnergyEngine } {
  return engine ? { energy: engine } : {};
}

function maxCostOption(maxCost: SweepMaxCost | undefined): { maxCost?: SweepMaxCost } {
  return maxCost ? { maxCost } : {};
}
