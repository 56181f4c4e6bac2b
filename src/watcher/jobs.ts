import { type ChainRegistry, SIM_BLOCK_CHANNEL } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import { type Listen, runNotifiedLoop } from "../worker/notified-loop.js";
import type { Job } from "../worker/runner.js";
import type { DepositHandoff } from "./handoff.js";
import { ChainWatcher } from "./watcher.js";

/**
 * A simulator watcher that LISTENs is woken by every mined block; its poll only renews its lease
 * (20 s) and takes over a dead worker's. Without LISTEN it polls at the chain's interval (1 s).
 */
const SIM_NOTIFIED_POLL_MS = 5_000;

export interface WatcherJobDeps {
  db: Db;
  chains: ChainRegistry;
  depositHandoff: DepositHandoff;
  /** Derives the gateway's addresses (watch-only): a watched row is matched only at its own derivation. */
  addressDeriver: { address(network: CurrencyType, environment: Environment, index: number): string };
  logger: Logger;
  clock: Clock;
  /** LISTEN on the database (`Database.listen`): wakes simulator watchers when a block is mined. */
  listen?: Listen | undefined;
}

/** One watcher job per available (network, environment) chain; the lease picks one worker per chain. */
export function watcherJobs(deps: WatcherJobDeps, instanceId: string): Job[] {
  return deps.chains.available().map((chain) => {
    const watcher = new ChainWatcher({
      db: deps.db,
      network: chain.network,
      environment: chain.environment,
      adapter: chain.adapter,
      confirmations: chain.confirmations,
      scan: chain.scan,
      handoff: deps.depositHandoff,
      derive: (index) => deps.addressDeriver.address(chain.network, chain.environment, index),
      logger: deps.logger,
      clock: deps.clock,
      owner: instanceId,
      start: chain.kind === "simulator" ? "genesis" : "watched",
    });
    const name = `watcher:${chain.network}:${chain.environment}`;
    if (chain.kind !== "simulator" || !deps.listen) {
      return {
        name,
        everyMs: chain.scan.pollIntervalMs,
        async run(signal: AbortSignal) {
          await watcher.tick(signal);
        },
        stop: () => watcher.releaseLease(),
      };
    }
    // The simulator announces each mined block (NOTIFY at commit): one long run that scans, then
    // sleeps until a block of this chain is announced or the poll interval passes.
    const listen = deps.listen;
    return {
      name,
      everyMs: chain.scan.pollIntervalMs,
      run: (signal: AbortSignal) =>
        runNotifiedLoop(signal, {
          listen,
          channel: SIM_BLOCK_CHANNEL,
          logger: deps.logger,
          logContext: { chain: `${chain.network}/${chain.environment}` },
          what: "simulator blocks",
          // `tick` never throws: every round is followed by the notified poll.
          round: async (s) => {
            await watcher.tick(s);
            return SIM_NOTIFIED_POLL_MS;
          },
          retryMs: SIM_NOTIFIED_POLL_MS,
        }),
      stop: () => watcher.releaseLease(),
    };
  });
}
